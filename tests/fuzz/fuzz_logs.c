/* fuzz_logs.c: libFuzzer harness of the readers `costbench import` runs on files a user pastes
 * or downloads: the training-log parsers of every format (the rows of report/logs/registry.c),
 * format detection, the YAML and TOML config reader (report/formats/kvconf.c), the collective-benchmark reader
 * (report/formats/netfit.c: nccl-tests tables, `costbench allreduce` CSVs) and the JSON reader of price
 * catalogues (report/formats/json.c).
 *
 * Each input is written to a scratch file, loaded as lines, and given to every parser; an input
 * with a line "@@config@@" is two files, the log before it and the config after (fuzz_io.h), and
 * every parser is then given that config as `import --config` would give it. A parser
 * either returns 0 with a run whose steps name lines inside the file, or rejects the input with
 * one "error:" line (run with -close_fd_mask=2). Besides the sanitizers, the harness aborts when
 * an accepted log breaks what logimport.h promises: steps in file order naming real lines.
 *
 *   make fuzz / make fuzz-explore                  every harness (see Makefile)
 *   build-fuzz/fuzz_logs -close_fd_mask=2 -max_len=8192 DIR   fuzz with corpus DIR
 *   build-fuzz/fuzz_logs FILE                      replay one input, errors shown
 *
 * Seeds: tests/fuzz/corpus/logs/ (the fixtures of tests/logs/ and tests/catalogs/, each log joined
 * to its config, and what fuzzing found). */
#include <stdint.h>
#include <stdlib.h>

#include "../../report/formats/json.h"
#include "../../report/formats/kvconf.h"
#include "../../report/logs/registry.h"
#include "../../report/formats/netfit.h"
#include "fuzz_io.h"

static int log_file = -1, config_file = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    fuzz_init(*argc, *argv);
    log_file = fuzz_tmp_new("log");
    config_file = fuzz_tmp_new("config");
    return 0;
}

static void check_run(const text_lines *t, const log_run *r, int k)
{
    for (int s = 0; s < r->nsteps; s++) {
        int line = r->steps[s].line;
        if (line < 1 || line > t->n)
            fuzz_fail("the %s parser accepted '%s' with a step at line %d of %d", log_formats[k].name, t->path, line,
                      t->n);
        if (s > 0 && line < r->steps[s - 1].line)
            fuzz_fail("the %s parser accepted '%s' with steps out of file order", log_formats[k].name, t->path);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *config;
    size_t config_n, log_n = fuzz_split_config(data, size, &config, &config_n);
    fuzz_tmp_write(log_file, data, log_n);
    if (config) fuzz_tmp_write(config_file, config, config_n);
    const char *path = fuzz_tmp_path(log_file), *config_path = config ? fuzz_tmp_path(config_file) : NULL;
    text_lines t;
    if (text_lines_load(&t, path) == 0) {
        log_format f;
        (void)log_detect_line(&t, &f, NULL);
        for (int k = 0; k < log_nformats; k++) {
            log_run r;
            log_run_init(&r, k);
            if (log_formats[k].parse(&t, config_path, &r) == 0) check_run(&t, &r, k);
            log_run_free(&r);
        }
        if (netfit_detect(&t)) {
            net_run runs[NET_NCOLL];
            int nruns = 0;
            if (netfit_parse(&t, NULL, runs, &nruns) == 0)
                for (int k = 0; k < nruns; k++) net_run_free(&runs[k]);
        }
        text_lines_free(&t);
    }
    kv_conf c;
    for (const char *p = path; p; p = p == path ? config_path : NULL) {
        if (kvconf_load_yaml(&c, p) == 0) kvconf_free(&c);
        if (kvconf_load_toml(&c, p) == 0) kvconf_free(&c);
    }
    json_val v;
    if (json_load(path, &v) == 0) json_free(&v);
    fuzz_input_done();
    return 0;
}
