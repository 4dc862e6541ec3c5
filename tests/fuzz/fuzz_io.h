/* fuzz_io.h: what the fuzz harnesses share: start-up, failure reports, and the scratch files
 * through which each input reaches the project's loaders, which take paths.
 *
 * stderr: the loaders print one "error:" line per rejected input (thousands for a CSV whose
 * cells all fail the typed getters). Under -close_fd_mask=2 those lines go nowhere, so stderr
 * is then fully buffered and flushed once per input instead of a write per line; a harness's
 * own failure report goes to a copy of the original stderr taken at start-up, which libFuzzer's
 * report also reaches. Replaying a file (no -close_fd_mask) shows every line as it comes.
 *
 * Scratch files (and directories) are created once per process (mkstemp in /dev/shm when it is
 * writable, else in /tmp), rewritten in place for every input and removed at exit. A crash ends
 * the process without running exit handlers: what it leaves behind ("costbench-fuzz-<pid>-...")
 * is removed by the next harness that starts. */
#ifndef CB_FUZZ_IO_H
#define CB_FUZZ_IO_H

#include <stddef.h>
#include <stdint.h>

/* Call first from LLVMFuzzerInitialize (before libFuzzer closes stderr). */
void fuzz_init(int argc, char **argv);
/* Prints "<harness>: <formatted>" where libFuzzer's report goes, then aborts: the input broke
 * a promise of the API under test. */
__attribute__((noreturn, format(printf, 1, 2))) void fuzz_fail(const char *fmt, ...);
/* Call at the end of each input: flushes the buffered stderr. */
void fuzz_input_done(void);

/* A new empty file "<dir>/costbench-fuzz-<pid>-<stem>-XXXXXX" (mkstemp family). Returns its
 * handle; on failure prints the reason and exits 1 (harness set-up, not an input). */
int fuzz_tmp_new(const char *stem);
/* A new empty file named like `base` followed by `suffix`, created exclusively: the pair
 * PREFIX.idx / PREFIX.bin of one reserved PREFIX. Returns its handle; exits 1 on failure. */
int fuzz_tmp_sibling(int base, const char *suffix);
const char *fuzz_tmp_path(int h);
/* Replaces the file's content with data[0..n). Aborts if the scratch file cannot be written. */
void fuzz_tmp_write(int h, const uint8_t *data, size_t n);

/* A new empty directory "<dir>/costbench-fuzz-<pid>-<stem>-XXXXXX" (mkdtemp), for files the code
 * under test replaces by a rename (a handle would keep the old file). Removed at exit with what it
 * holds (two levels deep), or by the next harness after a crash. Returns its path; exits 1 on
 * failure. */
const char *fuzz_tmp_dir(const char *stem);
/* Creates or truncates path and writes data[0..n) to it. Aborts if it cannot. */
void fuzz_file_write(const char *path, const void *data, size_t n);

/* The separator line of a two-file input: a log, then "@@config@@" on a line of its own, then
 * the config file (YAML or TOML) that `import --config` would be given. */
#define FUZZ_CONFIG_SEP "\n@@config@@\n"
/* The length of the log part of data[0..n) (n when there is no separator); *config and *config_n:
 * the config part (NULL, 0 when none). */
size_t fuzz_split_config(const uint8_t *data, size_t n, const uint8_t **config, size_t *config_n);

#endif
