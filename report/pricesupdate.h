/* pricesupdate.h: `costbench prices update`: the current public price catalogues downloaded
 * (report/download.h) and imported as `prices import` reads them (report/formats/priceimport.h),
 * then merged into the price file in one atomic write, or nothing written at all:
 *   aws, gcp, lambda  SkyPilot's hosted catalogue <base>/catalogs/v8/<cloud>/vms.csv (the
 *                     schema version SkyPilot reads: sky/skylet/constants.py), format skypilot;
 *   azure             the Azure Retail Prices API <base>/api/retail/prices?$filter=serviceName eq
 *                     'Virtual Machines' and armRegionName eq 'R' [and (armSkuName eq ...)],
 *                     every page (NextPageLink) up to a cap, the pages' Items imported as one
 *                     answer, format azure-retail;
 *   aws (--source vendor)  AWS's offer file of AmazonEC2 for the region as CSV,
 *                     <base>/offers/v1.0/aws/AmazonEC2/current/<region>/index.csv, format
 *                     aws-offer (its Publication Date is the rows' as_of); large (GBs for
 *                     us-east-1), hence not the default.
 * Rows downloaded from SkyPilot and Azure are dated the day of the download (UTC). A price that
 * changed replaces the old row, which stays as a '#' line saying what replaced it. */
#ifndef CB_PRICESUPDATE_H
#define CB_PRICESUPDATE_H

typedef struct {
    const char *cloud;    /* aws, azure, gcp or lambda; NULL: all four */
    const char *region;   /* NULL: each cloud's default (us-east-1, eastus, us-central1, us-east-1) */
    const char *source;   /* "skypilot" or "vendor"; NULL: each cloud's default (above) */
    const char *out;      /* the price file updated (NULL: data/prices.csv, machine_data_file) */
    const char *url_base; /* NULL: $COSTBENCH_PRICES_URL, else the public hosts */
    const char *hw_path;  /* the instance types kept (NULL: data/hardware.csv) */
    int all_instances;    /* 1: every instance type of the catalogue */
    int max_pages;        /* Azure pages read at most (0: 200) */
} prices_update_opts;

/* Downloads, imports and merges. Returns 0, CB_EUSAGE (a bad flag, a catalogue the importer
 * refuses) or CB_EFAIL (a failed download); on any failure the price file is untouched. */
int prices_update_run(const prices_update_opts *o);

#endif
