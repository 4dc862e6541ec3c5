/* priceimport.h: price rows (report/formats/inputs.h price_row) read from cloud price catalogues:
 *   skypilot      the SkyPilot catalogue CSV of one cloud (vms.csv: InstanceType, Price,
 *                 SpotPrice, Region, AvailabilityZone, ...); Price -> on_demand, SpotPrice ->
 *                 spot; the zones of a region are one row (at the lowest zone price when they
 *                 differ, the spread reported); without an AvailabilityZone column two prices of
 *                 one key are a conflict. A catalogue that prices GPUs apart (GCP: rows
 *                 without InstanceType) joins a machine type that carries GPUs (a2-highgpu-8g:
 *                 8 x A100, ...) to the GPU row of the same zone: host + GPUs, on demand and spot
 *                 alike; a host without its GPU row is noted and dropped, never priced alone.
 *   aws-offer     the AWS Price List offer file of AmazonEC2 as CSV (5 metadata rows, then the
 *                 header); OnDemand -> on_demand; standard Reserved terms -> reserved_1y /
 *                 reserved_3y at hourly + upfront / (years x 8760), the cheapest purchase option.
 *   azure-retail  the Azure Retail Prices API JSON (Items[], or a saved list of items):
 *                 Consumption -> on_demand (spot for a "Spot" skuName), Reservation -> reserved_1y
 *                 / reserved_3y at the term's price / (years x 8760); as_of the item's
 *                 effectiveStartDate (--as-of only for an item without one); a (SKU, region,
 *                 option) priced again is a price change: the latest effectiveStartDate kept, the
 *                 others counted as superseded; Cloud Services and Dedicated Host products and
 *                 Windows prices ("Windows" or "Win" as a word of the product, meter or SKU
 *                 name) dropped and counted; a NextPageLink set is noted (one page read).
 * Every row names its catalogue file and line (or item). What was dropped is counted by reason.
 * The formats are the rows of price_formats (priceimport.c): adding one = its reader in
 * priceimport.c (described above) and its row there; `prices import` takes its flag, help and
 * errors from that table. */
#ifndef CB_PRICEIMPORT_H
#define CB_PRICEIMPORT_H

#include <stdio.h>

#include "inputs.h"

struct pi_ctx; /* priceimport.c's reading context: the catalogue, the flags, the notes */
struct price_import;

/* A catalogue format: one row of the registry price_formats. */
typedef struct {
    const char *name;      /* --format NAME; each row's source names it too */
    const char *help;      /* what the catalogue is, in a few words (help texts) */
    const char *provider;  /* the cloud the format fixes (aws-offer: aws); NULL: --provider, or the path */
    const char *as_of_why; /* NULL: the catalogue states when its prices were read; else --as-of is
                            * required and this follows the error ("": nothing) */
    int (*read)(struct price_import *pi, struct pi_ctx *c); /* its rows into pi (CB_EUSAGE: one error) */
} price_format;
extern const price_format price_formats[];
extern const int price_nformats;
/* The format called name; NULL when none is. */
const price_format *price_format_find(const char *name);
/* The formats' names into buf joined by sep, the last two by last ("skypilot, aws-offer or
 * azure-retail"); need_as_of: only those that need --as-of. */
void price_formats_join(char *buf, size_t n, const char *sep, const char *last, int need_as_of);

typedef struct {
    const price_format *format;
    const char *as_of;     /* required where the format's as_of_why says; aws-offer: its Publication Date */
    const char *provider;  /* NULL: from the format, else from the path (.../<cloud>/vms.csv) */
    char *const *instances; /* instance types to keep (ninstances of them; 0: all) */
    int ninstances;
    char *const *regions;   /* regions to keep (nregions of them; 0: all) */
    int nregions;
} price_import_opts;

#define PI_MAX_REASONS 24
typedef struct price_import {
    price_row *rows;
    int n, cap;
    int nread;   /* catalogue rows or items read */
    int nfolded; /* rows folded into an earlier row of the same key (zones of a region) */
    int nsuperseded; /* azure-retail: prices of a key another item's later effectiveStartDate replaced */
    int next_page;   /* azure-retail: the answer's NextPageLink is set (one page of a longer answer) */
    char reasons[PI_MAX_REASONS][96];
    int dropped[PI_MAX_REASONS];
    int nreasons;
} price_import;

/* Reads a catalogue into pi (rows in catalogue order), each price rounded as the file will hold it
 * (%.9g) and checked by price_row_check. Notes (zone spreads, the reserved purchase options not
 * chosen) go to `notes` (NULL: none). Returns 0 or CB_EUSAGE after one error naming file:line (a
 * malformed catalogue, a conflict between two of its rows, a row the price file would refuse). */
int price_import_read(price_import *pi, const char *path, const price_import_opts *o, FILE *notes);
void price_import_free(price_import *pi);
/* "read N rows; kept K price rows; dropped: reason (count), ..." */
void price_import_summary(const price_import *pi, FILE *f);

/* Adds pi's rows to the price file `out` (a new file gets the header; a header-only file is
 * taken). A row equal to an existing one (same instance, region, option and price) is reported and
 * skipped; the same key at another price is a conflict: one error per conflict and nothing
 * written, unless `replace`: the old record then stays as '#' lines saying what replaced it. The
 * merged text is loaded back by prices_load's rules (errors name `out`) before it replaces `out`
 * (temporary file and rename): `out` is untouched unless the result loads. No rows to add is an
 * error. `replace` PI_MERGE_REFRESH (`prices update`): as `replace`, and a row at the same price
 * but another as_of is replaced too (the price confirmed at a newer date). Returns 0, CB_EUSAGE
 * (conflicts, a result that would not load) or CB_EFAIL. */
#define PI_MERGE_REFRESH 2
int price_import_merge(const price_import *pi, const char *out, int replace, FILE *report);
/* `prices import` end to end: reads `catalogue` (price_import_read), prints the summary, then
 * merges into `out` (price_import_merge) or, for NULL, writes CSV to stdout. Notes, the summary
 * and the merge report go to `notes` (NULL: none; the merge report then to stderr). Any 0 it
 * returns with `out` leaves a file prices_load reads. Returns 0, CB_EUSAGE or CB_EFAIL. */
int price_import_file(const char *catalogue, const price_import_opts *o, const char *out, int replace, FILE *notes);
/* Writes pi's rows as a price CSV ("-": stdout). */
int price_import_write(const price_import *pi, const char *path);

#endif
