#include "pricesupdate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/err.h"
#include "../common/files.h"
#include "../common/machine.h"
#include "download.h"
#include "formats/inputs.h"
#include "formats/json.h"
#include "formats/priceimport.h"

/* The public hosts; --url-base (or $COSTBENCH_PRICES_URL) replaces each of them. */
#define SKYPILOT_BASE "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master"
#define SKYPILOT_SCHEMA "v8" /* SkyPilot's CATALOG_SCHEMA_VERSION (sky/skylet/constants.py) */
#define AZURE_BASE "https://prices.azure.com"
#define AWS_BASE "https://pricing.us-east-1.amazonaws.com"
#define AZURE_DEFAULT_PAGES 200
#define CSV_MAX_BYTES ((size_t)64 << 20)          /* a SkyPilot catalogue: a few MB */
#define AWS_MAX_BYTES ((size_t)16 << 30)          /* an AmazonEC2 region offer file: GBs */
#define PAGE_MAX_BYTES ((size_t)16 << 20)         /* one Azure page: about 1000 items */

typedef struct update_ctx update_ctx;
typedef int (*fetch_fn)(update_ctx *u, const char *cloud, const char *region, price_import *all);

/* The clouds: the default region and source of each, and how each source is fetched. */
static int fetch_skypilot(update_ctx *u, const char *cloud, const char *region, price_import *all);
static int fetch_azure(update_ctx *u, const char *cloud, const char *region, price_import *all);
static int fetch_aws_offer(update_ctx *u, const char *cloud, const char *region, price_import *all);
static const struct {
    const char *name, *region;
    fetch_fn skypilot, vendor; /* NULL: no such source */
    int vendor_default;
} clouds[] = {
    {"aws", "us-east-1", fetch_skypilot, fetch_aws_offer, 0},
    {"azure", "eastus", fetch_skypilot, fetch_azure, 1},
    {"gcp", "us-central1", fetch_skypilot, NULL, 0},
    {"lambda", "us-east-1", fetch_skypilot, NULL, 0},
};
#define NCLOUDS ((int)(sizeof clouds / sizeof clouds[0]))

struct update_ctx {
    const prices_update_opts *o;
    const char *base; /* the override, or NULL */
    char dir[CB_PATH_MAX];
    char today[16]; /* YYYY-MM-DD (UTC): the as_of of rows whose catalogue states no date */
    char **instances;
    int ninstances;
};

/* The URL of `path` under the override, or under the public host `host`. */
static int url_fmt(const update_ctx *u, const char *host, const char *path, char *out, size_t n)
{
    int len = snprintf(out, n, "%s%s", u->base ? u->base : host, path);
    if (len < 0 || (size_t)len >= n) return err_usage("URL too long: '%.80s...'", out);
    return 0;
}

/* Each row's source: the catalogue's URL (no query) in place of the temporary file's path. */
static int sources_name(price_import *pi, const char *tmp, const char *url)
{
    size_t tl = strlen(tmp), ul = strcspn(url, "?");
    for (int i = 0; i < pi->n; i++) {
        price_row *p = &pi->rows[i];
        char s[sizeof p->source];
        if (strncmp(p->source, tmp, tl) != 0) continue;
        int len = snprintf(s, sizeof s, "%.*s%s", (int)ul, url, p->source + tl);
        if (len < 0 || (size_t)len >= sizeof s)
            return err_usage("%.*s: the rows' source would not fit the price file's column", (int)ul, url);
        memcpy(p->source, s, sizeof s);
    }
    return 0;
}

/* pi's rows appended to all's (counts too). Returns 0 or CB_EFAIL. */
static int rows_append(price_import *all, const price_import *pi)
{
    if (pi->n > all->cap - all->n) {
        int cap = all->n + pi->n + 64;
        price_row *r = realloc(all->rows, (size_t)cap * sizeof *r);
        if (!r) return err_msg("out of memory");
        all->rows = r;
        all->cap = cap;
    }
    memcpy(all->rows + all->n, pi->rows, (size_t)pi->n * sizeof *pi->rows);
    all->n += pi->n;
    all->nread += pi->nread;
    return 0;
}

/* Imports the downloaded file `tmp` (from url) as `prices import --format format --provider cloud
 * --regions region` does, and appends its rows to all. */
static int import_downloaded(update_ctx *u, const char *tmp, const char *url, const char *format,
                             const char *cloud, const char *region, price_import *all)
{
    char *regions[1] = {(char *)region};
    price_import_opts io = {.format = price_format_find(format), .provider = cloud, .regions = regions,
                            .nregions = 1, .instances = u->instances, .ninstances = u->ninstances};
    if (io.format->as_of_why) io.as_of = u->today; /* the catalogue states no date: the download's */
    price_import pi;
    if (price_import_read(&pi, tmp, &io, NULL) != 0) {
        fprintf(stderr, "note: the file above is %s as downloaded: refused, nothing written\n", url);
        return CB_EUSAGE;
    }
    printf("%s %s: %s: ", cloud, region, url);
    price_import_summary(&pi, stdout);
    int rc = sources_name(&pi, tmp, url);
    if (rc == 0) rc = rows_append(all, &pi);
    price_import_free(&pi);
    return rc;
}

/* Downloads url into the temporary file named `name` under the cloud's folder (path into tmp). */
static int download_tmp(update_ctx *u, const char *cloud, const char *name, const char *url, size_t max,
                        char *tmp, size_t n)
{
    if (path_fmt(tmp, n, "%s/%s", u->dir, cloud) != 0) return CB_EUSAGE;
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return err_msg("%s: cannot create: %s", tmp, strerror(errno));
    if (path_fmt(tmp, n, "%s/%s/%s", u->dir, cloud, name) != 0) return CB_EUSAGE;
    FILE *f = fopen(tmp, "wb");
    if (!f) return err_msg("%s: cannot create: %s", tmp, strerror(errno));
    int rc = download_to_file(url, f, max);
    if (fclose(f) != 0 && rc == 0) rc = err_msg("%s: cannot write: %s", tmp, strerror(errno));
    return rc;
}

/* ------------------------------------------------------------------ the sources */

static int fetch_skypilot(update_ctx *u, const char *cloud, const char *region, price_import *all)
{
    char path[256], url[2048], tmp[CB_PATH_MAX];
    snprintf(path, sizeof path, "/catalogs/" SKYPILOT_SCHEMA "/%s/vms.csv", cloud);
    if (url_fmt(u, SKYPILOT_BASE, path, url, sizeof url) != 0) return CB_EUSAGE;
    int rc = download_tmp(u, cloud, "vms.csv", url, CSV_MAX_BYTES, tmp, sizeof tmp);
    if (rc == 0) rc = import_downloaded(u, tmp, url, "skypilot", cloud, region, all);
    unlink(tmp);
    return rc;
}

static int fetch_aws_offer(update_ctx *u, const char *cloud, const char *region, price_import *all)
{
    char path[256], url[2048], tmp[CB_PATH_MAX];
    snprintf(path, sizeof path, "/offers/v1.0/aws/AmazonEC2/current/%s/index.csv", region);
    if (url_fmt(u, AWS_BASE, path, url, sizeof url) != 0) return CB_EUSAGE;
    int rc = download_tmp(u, cloud, "index.csv", url, AWS_MAX_BYTES, tmp, sizeof tmp);
    if (rc == 0) rc = import_downloaded(u, tmp, url, "aws-offer", cloud, region, all);
    unlink(tmp);
    return rc;
}

/* ---- Azure: the pages of one answer */

/* The bytes of the top-level member "Items" of a JSON object text (already parsed, hence
 * valid): its array's contents between the brackets, [*a, *b). Returns 0, or -1 when absent. */
static int items_span(const char *s, size_t len, size_t *a, size_t *b)
{
    int depth = 0, want = 0; /* want: the last string at depth 1 was the key "Items" */
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '"') {
            size_t j = i + 1;
            while (j < len && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
            if (depth == 1) want = j - i - 1 == 5 && memcmp(s + i + 1, "Items", 5) == 0;
            i = j;
        } else if (c == '[' || c == '{') {
            if (depth == 1 && c == '[' && want) *a = i + 1;
            depth++;
        } else if (c == ']' || c == '}') {
            depth--;
            if (depth == 1 && c == ']' && want) {
                *b = i;
                return 0;
            }
        } else if (c == ',') {
            if (depth == 1) want = 0;
        }
    }
    return -1;
}

/* s percent-encoded (RFC 3986 unreserved characters kept) into out. */
static int url_escape(const char *s, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF", keep[] = "-._~";
    size_t k = 0;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        int plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                    strchr(keep, *c);
        if (k + 4 > n) return err_usage("the Azure filter is too long for a URL");
        if (plain) {
            out[k++] = (char)*c;
        } else {
            out[k++] = '%';
            out[k++] = hex[*c >> 4];
            out[k++] = hex[*c & 15];
        }
    }
    out[k] = '\0';
    return 0;
}

/* The first page's URL: the VMs of the region, and of the Azure instance types kept. */
static int azure_first_url(const update_ctx *u, const char *region, char *url, size_t n)
{
    char filter[4096], esc[12288];
    size_t len = (size_t)snprintf(filter, sizeof filter,
                                  "serviceName eq 'Virtual Machines' and armRegionName eq '%s'", region);
    int k = 0;
    for (int i = 0; i < u->ninstances && len < sizeof filter; i++) {
        if (strncmp(u->instances[i], "Standard_", 9) != 0) continue; /* not an Azure VM size */
        len += (size_t)snprintf(filter + len, sizeof filter - len, "%sarmSkuName eq '%s'", k++ ? " or " : " and (",
                                u->instances[i]);
    }
    if (k && len < sizeof filter) len += (size_t)snprintf(filter + len, sizeof filter - len, ")");
    if (len >= sizeof filter) return err_usage("the Azure filter is too long for a URL");
    if (url_escape(filter, esc, sizeof esc) != 0) return CB_EUSAGE;
    char path[12400];
    snprintf(path, sizeof path, "/api/retail/prices?$filter=%s", esc);
    return url_fmt(u, AZURE_BASE, path, url, n);
}

/* One page: parsed (errors name the URL), its Items appended to f, its NextPageLink into next
 * ("" at the last page; a link to the public host, with or without ":443", goes to the override
 * when one is given). */
static int azure_page(update_ctx *u, const char *url, FILE *f, int *nitems, char *next, size_t n)
{
    char *text;
    size_t len, a = 0, b = 0;
    if (download_to_mem(url, &text, &len, PAGE_MAX_BYTES) != 0) return CB_EFAIL;
    json_val doc;
    int rc = json_parse(text, len, url, &doc);
    const json_val *items = rc ? NULL : json_get(&doc, "Items"), *link = rc ? NULL : json_get(&doc, "NextPageLink");
    if (rc == 0 && (!items || items->kind != JSON_ARRAY || items_span(text, len, &a, &b) != 0))
        rc = err_usage("%s: not an Azure retail prices answer: no 'Items' array", url);
    if (rc == 0 && link && link->kind != JSON_NULL && link->kind != JSON_STRING)
        rc = err_usage("%s: 'NextPageLink': expected a URL or null", url);
    next[0] = '\0';
    if (rc == 0 && link && link->kind == JSON_STRING) {
        const char *l = link->str, *rest = l; /* rest: the link's path when it is on the public host */
        if (u->base && strncmp(l, AZURE_BASE, sizeof AZURE_BASE - 1) == 0) {
            rest = l + sizeof AZURE_BASE - 1;
            if (strncmp(rest, ":443", 4) == 0) rest += 4;
            if (*rest != '/') rest = l;
        }
        int w = snprintf(next, n, "%s%s", rest != l ? u->base : "", rest);
        if (w < 0 || (size_t)w >= n) rc = err_usage("%s: 'NextPageLink' too long", url);
    }
    if (rc == 0 && items->n > 0) {
        fprintf(f, "%s", *nitems ? ",\n" : "");
        fwrite(text + a, 1, b - a, f);
        *nitems += items->n;
    }
    if (rc == 0) json_free(&doc);
    free(text);
    return rc;
}

/* Every page of the answer (NextPageLink until null, at most --max-pages), their Items joined
 * into one answer, imported once as `prices import --format azure-retail` reads a page. */
static int fetch_azure(update_ctx *u, const char *cloud, const char *region, price_import *all)
{
    char url[16384], next[16384], tmp[CB_PATH_MAX];
    int max = u->o->max_pages > 0 ? u->o->max_pages : AZURE_DEFAULT_PAGES, pages = 0, nitems = 0;
    if (azure_first_url(u, region, url, sizeof url) != 0) return CB_EUSAGE;
    char first[16384];
    memcpy(first, url, sizeof first);
    if (path_fmt(tmp, sizeof tmp, "%s/%s", u->dir, cloud) != 0) return CB_EUSAGE;
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return err_msg("%s: cannot create: %s", tmp, strerror(errno));
    if (path_fmt(tmp, sizeof tmp, "%s/%s/retail.json", u->dir, cloud) != 0) return CB_EUSAGE;
    FILE *f = fopen(tmp, "wb");
    if (!f) return err_msg("%s: cannot create: %s", tmp, strerror(errno));
    fprintf(f, "{\"Items\": [\n");
    int rc = 0;
    while (rc == 0 && url[0]) {
        if (pages == max) {
            rc = err_msg("%s: more pages after %d (--max-pages): nothing written", url, max);
            break;
        }
        rc = azure_page(u, url, f, &nitems, next, sizeof next);
        pages++;
        memcpy(url, next, sizeof url);
    }
    fprintf(f, "\n]}\n");
    if (fclose(f) != 0 && rc == 0) rc = err_msg("%s: cannot write: %s", tmp, strerror(errno));
    if (rc == 0) printf("%s %s: %d pages, %d items\n", cloud, region, pages, nitems);
    if (rc == 0) rc = import_downloaded(u, tmp, first, "azure-retail", cloud, region, all);
    unlink(tmp);
    return rc;
}

/* ------------------------------------------------------------------ the run */

/* The instance types kept: those of the hardware table (names copied into u->instances). */
static int instances_load(update_ctx *u)
{
    if (u->o->all_instances) return 0;
    char path[CB_PATH_MAX];
    const char *hw = u->o->hw_path;
    if (!hw && machine_data_file(path, sizeof path, "hardware.csv") != 0) return CB_EUSAGE;
    hw_table ht;
    if (hardware_load(&ht, hw ? hw : path) != 0) return CB_EUSAGE;
    u->instances = calloc((size_t)ht.n + 1, sizeof *u->instances);
    int rc = u->instances ? 0 : err_msg("out of memory");
    for (int i = 0; rc == 0 && i < ht.n; i++)
        if (!(u->instances[u->ninstances++] = strdup(ht.rows[i].instance))) rc = err_msg("out of memory");
    hardware_free(&ht);
    return rc;
}

static void instances_free(update_ctx *u)
{
    for (int i = 0; i < u->ninstances; i++) free(u->instances[i]);
    free(u->instances);
}

/* The flags checked; the cloud's index into *only (-1: all). */
static int update_check(const prices_update_opts *o, int *only)
{
    *only = -1;
    for (int i = 0; o->cloud && i < NCLOUDS; i++)
        if (strcmp(o->cloud, clouds[i].name) == 0) *only = i;
    if (o->cloud && *only < 0)
        return err_usage("flag '--cloud': expected aws, azure, gcp or lambda, got '%s'", o->cloud);
    if (o->region && *only < 0) return err_usage("flag '--region': give it with --cloud (regions differ by cloud)");
    if (o->source && strcmp(o->source, "skypilot") && strcmp(o->source, "vendor"))
        return err_usage("flag '--source': expected skypilot or vendor, got '%s'", o->source);
    if (o->source && strcmp(o->source, "vendor") == 0 && (*only < 0 || !clouds[*only].vendor))
        return err_usage("flag '--source': vendor price lists are read for --cloud aws or azure only");
    if (o->max_pages < 0) return err_usage("flag '--max-pages': expected a number >= 1");
    if (o->region && (!*o->region || strspn(o->region, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(o->region)))
        return err_usage("flag '--region': expected a region name (lower-case letters, digits, '-'), got '%s'",
                         o->region);
    return 0;
}

/* Every cloud asked for (all, or only), downloaded and imported into all. */
static int update_fetch(update_ctx *u, int only, price_import *all)
{
    int rc = 0;
    for (int i = 0; rc == 0 && i < NCLOUDS; i++) {
        if (only >= 0 && i != only) continue;
        const char *src = u->o->source;
        int vendor = src ? strcmp(src, "vendor") == 0 : clouds[i].vendor_default;
        fetch_fn f = vendor ? clouds[i].vendor : clouds[i].skypilot;
        rc = f(u, clouds[i].name, u->o->region ? u->o->region : clouds[i].region, all);
    }
    return rc;
}

static void tmp_remove(const update_ctx *u)
{
    char p[CB_PATH_MAX];
    for (int i = 0; i < NCLOUDS; i++)
        if (path_fmt(p, sizeof p, "%s/%s", u->dir, clouds[i].name) == 0) rmdir(p);
    rmdir(u->dir);
}

int prices_update_run(const prices_update_opts *o)
{
    int only;
    if (update_check(o, &only) != 0) return CB_EUSAGE;
    update_ctx u = {.o = o, .base = o->url_base};
    if (!u.base && getenv("COSTBENCH_PRICES_URL") && *getenv("COSTBENCH_PRICES_URL"))
        u.base = getenv("COSTBENCH_PRICES_URL");
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(u.today, sizeof u.today, "%Y-%m-%d", &tm);
    char out[CB_PATH_MAX];
    if (!o->out && machine_data_file(out, sizeof out, "prices.csv") != 0) return CB_EUSAGE;
    const char *tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    if (path_fmt(u.dir, sizeof u.dir, "%s/costbench-prices.XXXXXX", tmpdir) != 0) return CB_EUSAGE;
    if (!mkdtemp(u.dir)) return err_msg("%s: cannot create a temporary folder: %s", u.dir, strerror(errno));
    price_import all = {0};
    int rc = instances_load(&u);
    if (rc == 0) rc = update_fetch(&u, only, &all);
    if (rc == 0) rc = price_import_merge(&all, o->out ? o->out : out, PI_MERGE_REFRESH, stdout);
    if (rc == 0) printf("%s: updated (%d price rows downloaded)\n", o->out ? o->out : out, all.n);
    if (rc != 0) fprintf(stderr, "note: %s is unchanged\n", o->out ? o->out : out);
    price_import_free(&all);
    instances_free(&u);
    tmp_remove(&u);
    return rc;
}
