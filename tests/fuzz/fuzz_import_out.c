/* fuzz_import_out.c: libFuzzer harness of `costbench import LOG --out FILE` end to end, FILE an
 * existing published-runs file: the same calls report/importrun.c makes without configuration
 * flags (format detection from the first step line, the format's parser, import_merge's part that
 * needs no flag, the steady state, the row, its load-back check where it is complete, logrow_save),
 * with FILE a scratch copy of data/reference/published/trn1_table1.csv restored before each input.
 *
 * Each input is a log, or a log and its --config file after a line "@@config@@" (fuzz_io.h).
 * nccl-tests and `costbench allreduce` output (import's network path) is passed over. The promise
 * checked, besides the sanitizers: when the import succeeds, published_load (the loader of
 * `validate` and `--calibrate`) reads FILE back; when it fails, FILE is byte for byte what it was
 * and no other file is left beside it. The harness aborts otherwise.
 *
 *   make fuzz / make fuzz-explore                  every harness (see Makefile)
 *   build-fuzz/fuzz_import_out -close_fd_mask=2 DIR   fuzz with corpus DIR
 *   build-fuzz/fuzz_import_out FILE                replay one input, the import's output shown
 *
 * Seeds: tests/fuzz/corpus/import/ (the logs of tests/logs/, each log joined to its config, and
 * what fuzzing found). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/files.h"
#include "../../common/machine.h"
#include "../../report/formats/devices.h"
#include "../../report/logs/logimport.h"
#include "../../report/logs/logrow.h"
#include "../../report/logs/registry.h"
#include "../../report/formats/netfit.h"
#include "fuzz_io.h"

static int log_file = -1, config_file = -1;
static char out_dir[256], out_path[300];
static char *base;      /* the published-runs file FILE starts as */
static size_t base_n;
static dev_table devices;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init(*argc, *argv);
    log_file = fuzz_tmp_new("log");
    config_file = fuzz_tmp_new("config");
    snprintf(out_dir, sizeof out_dir, "%s", fuzz_tmp_dir("import"));
    snprintf(out_path, sizeof out_path, "%s/published.csv", out_dir);
    char path[CB_PATH_MAX];
    if (machine_data_file(path, sizeof path, "reference/published/trn1_table1.csv") != 0 ||
        !(base = file_read_all(path, 1 << 20, &base_n)) || devices_load(&devices, NULL) != 0) {
        fprintf(stderr, "error: fuzz_import_out: cannot read the data tables\n");
        exit(1);
    }
    return 0;
}

/* import_merge with no flag given (report/importrun.c): the data-parallel degree from the others
 * (import_dp), and the global batch for the steps that do not print theirs. */
static void merge_no_flags(log_run *r)
{
    if (r->dp <= 0 && r->devices > 0 && r->tp > 0 && r->pp > 0) {
        long workers = 1, cp = r->cp > 0 ? r->cp : 1;
        const dev_row *d = *r->device ? devices_find(&devices, r->device) : NULL;
        if (d) workers = d->workers;
        long ranks = r->devices * workers, model = (long)r->tp * r->pp * cp;
        if (ranks % model == 0) r->dp = (int)(ranks / model);
    }
    for (int k = 0; k < r->nsteps; k++)
        if (r->steps[k].global_batch <= 0) r->steps[k].global_batch = r->global_batch;
}

/* import_emit: what cmd_import does after parsing (report/importrun.c's import_emit, without flags):
 * the step order checked, the steady state, the row, and --out (logrow_save loads a complete row
 * back with the file it goes into, and refuses to append an incomplete one). */
static int import_emit(const text_lines *t, log_run *r)
{
    merge_no_flags(r);
    log_steady st = {0};
    int rc = log_steps_check(r, t->path);
    if (rc == 0) rc = log_steady_compute(r, -1, t->path, &st);
    logrow *row = rc == 0 ? malloc(sizeof *row) : NULL;
    if (rc == 0 && !row) fuzz_fail("out of memory");
    if (rc == 0) {
        logrow_build(r, &st, "fuzz-import", "costbench import of a fuzz input", row);
        const char *comments[1] = {"imported by fuzz_import_out"};
        rc = logrow_save(row, comments, 1, out_path);
    }
    free(row);
    log_steady_free(&st);
    return rc;
}

/* The files in out_dir other than FILE (a temporary left behind). */
static int stray_files(void)
{
    DIR *d = opendir(out_dir);
    if (!d) fuzz_fail("cannot list '%s'", out_dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && strcmp(e->d_name, "published.csv") != 0;
    closedir(d);
    return n;
}

static void check_out(int rc, const char *log_path)
{
    if (rc == 0) {
        pub_table p;
        if (published_load(&p, out_path, &devices) != 0)
            fuzz_fail("import of '%s' --out succeeded, but the loader refuses the file it left", log_path);
        published_free(&p);
    } else {
        size_t n = 0;
        char *now = file_read_all(out_path, 1 << 24, &n);
        int same = now && n == base_n && memcmp(now, base, n) == 0;
        free(now);
        if (!same) fuzz_fail("import of '%s' --out failed (%d), but it changed the file", log_path, rc);
    }
    if (stray_files()) fuzz_fail("import of '%s' --out left a file beside its target", log_path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *config;
    size_t config_n, log_n = fuzz_split_config(data, size, &config, &config_n);
    fuzz_tmp_write(log_file, data, log_n);
    if (config) fuzz_tmp_write(config_file, config, config_n);
    fuzz_file_write(out_path, base, base_n);
    text_lines t;
    if (text_lines_load(&t, fuzz_tmp_path(log_file)) != 0) return fuzz_input_done(), 0;
    log_format f;
    if (!netfit_detect(&t) && log_detect_line(&t, &f, NULL) >= 0) {
        log_run r;
        log_run_init(&r, f);
        int rc = log_formats[f].parse(&t, config ? fuzz_tmp_path(config_file) : NULL, &r);
        if (rc == 0) rc = import_emit(&t, &r);
        check_out(rc, t.path);
        log_run_free(&r);
    }
    text_lines_free(&t);
    fuzz_input_done();
    return 0;
}
