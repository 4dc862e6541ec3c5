/* fuzz_prices_out.c: libFuzzer harness of `costbench prices import CAT --format F --out FILE` end
 * to end, FILE an existing price file: price_import_read and price_import_merge
 * (report/formats/priceimport.h), the calls src/cmd_prices.c makes, with FILE a scratch copy of
 * data/prices.csv restored before each try.
 *
 * Each input is a catalogue, read in each format of the registry price_formats (--provider aws
 * where the format fixes no cloud: skypilot; --as-of 2026-01 where the format needs it: skypilot and
 * azure-retail; aws-offer with its own Publication Date), each
 * merged without and with --replace. The promise checked, besides the sanitizers: when the import
 * succeeds, prices_load (the loader of plan, scale, report and prices) reads FILE back; when it
 * fails, FILE is byte for byte what it was and no other file is left beside it. The harness aborts
 * otherwise.
 *
 *   make fuzz / make fuzz-explore                  every harness (see Makefile)
 *   build-fuzz/fuzz_prices_out -close_fd_mask=2 DIR   fuzz with corpus DIR
 *   build-fuzz/fuzz_prices_out FILE                replay one input, the import's output shown
 *
 * Seeds: tests/fuzz/corpus/prices/ (the catalogues of tests/catalogs/ and what fuzzing found). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/files.h"
#include "../../common/machine.h"
#include "../../report/formats/inputs.h"
#include "../../report/formats/priceimport.h"
#include "fuzz_io.h"

static int cat_file = -1;
static char out_dir[256], out_path[300];
static char *base; /* the price file FILE starts as */
static size_t base_n;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init(*argc, *argv);
    cat_file = fuzz_tmp_new("catalogue");
    snprintf(out_dir, sizeof out_dir, "%s", fuzz_tmp_dir("prices"));
    snprintf(out_path, sizeof out_path, "%s/prices.csv", out_dir);
    char path[CB_PATH_MAX];
    if (machine_data_file(path, sizeof path, "prices.csv") != 0 || !(base = file_read_all(path, 1 << 20, &base_n))) {
        fprintf(stderr, "error: fuzz_prices_out: cannot read data/prices.csv\n");
        exit(1);
    }
    return 0;
}

/* The files in out_dir other than FILE (a temporary left behind). */
static int stray_files(void)
{
    DIR *d = opendir(out_dir);
    if (!d) fuzz_fail("cannot list '%s'", out_dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && strcmp(e->d_name, "prices.csv") != 0;
    closedir(d);
    return n;
}

static void check_out(int rc, const char *cat, const price_format *f, int replace)
{
    const char *how = replace ? " --replace" : "";
    if (rc == 0) {
        price_table t;
        if (prices_load(&t, out_path) != 0)
            fuzz_fail("prices import '%s' --format %s%s --out succeeded, but the loader refuses the file it left", cat,
                      f->name, how);
        prices_free(&t);
    } else {
        size_t n = 0;
        char *now = file_read_all(out_path, 1 << 24, &n);
        int same = now && n == base_n && memcmp(now, base, n) == 0;
        free(now);
        if (!same)
            fuzz_fail("prices import '%s' --format %s%s --out failed (%d), but it changed the file", cat,
                      f->name, how, rc);
    }
    if (stray_files())
        fuzz_fail("prices import '%s' --format %s%s --out left a file beside its target", cat, f->name,
                  how);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_tmp_write(cat_file, data, size);
    const char *cat = fuzz_tmp_path(cat_file);
    for (int f = 0; f < price_nformats; f++) {
        const price_format *pf = &price_formats[f];
        price_import_opts o = {.format = pf, .as_of = pf->as_of_why ? "2026-01" : NULL,
                               .provider = pf->provider ? NULL : "aws"};
        price_import pi;
        if (price_import_read(&pi, cat, &o, NULL) != 0) continue;
        for (int replace = 0; replace < 2; replace++) {
            fuzz_file_write(out_path, base, base_n);
            int rc = price_import_merge(&pi, out_path, replace, stderr);
            check_out(rc, cat, pf, replace);
        }
        price_import_free(&pi);
    }
    fuzz_input_done();
    return 0;
}
