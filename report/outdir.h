/* outdir.h: the report's directory, which appears complete or not at all and replaces only a
 * directory costbench wrote. The report writes its files into a new temporary directory next to
 * --out; outdir_close adds the marker `.costbench-report` (the names of the files written) and
 * renames it to --out. An absent or empty --out is taken; a report directory is replaced (moved
 * aside, then only the files its marker lists deleted) when it holds nothing else, as is one of a
 * costbench that wrote no marker (only the report's own file names, report.md starting with
 * OUT_MD_TITLE). Any other --out is refused (CB_EUSAGE, one error naming it and a file costbench
 * did not write, and a hint), untouched: costbench never deletes a file it did not write. */
#ifndef CB_OUTDIR_H
#define CB_OUTDIR_H

#include <stddef.h>

/* The files a report writes, by name; the bits of a mask over them say which ones were written
 * (the marker lists them). These names and the marker's are the only files costbench ever
 * deletes from a report directory. */
enum { OUT_MD, OUT_CSV, OUT_TPUT, OUT_TPU, OUT_MM, OUT_LOSS, OUT_GN, OUT_NNAMES };
extern const char *const out_names[OUT_NNAMES];
/* report.md's first line; a report.md without it was not written by costbench. */
#define OUT_MD_TITLE "# costbench cost report"

/* Checks `out_dir` (refused as above before any work is done) and makes the temporary directory:
 * `dir` gets out_dir without trailing slashes, `tmp` the new directory's name. Returns 0 or an
 * error code. */
int outdir_open(const char *out_dir, char *dir, size_t ndir, char *tmp, size_t ntmp);
/* After the report wrote into `tmp` (rc 0; `wrote`: the bits of out_names it wrote): the marker,
 * then `tmp` renamed to `dir`. When rc or any of these fails, tmp's files and tmp are removed.
 * Returns rc, or the error that stopped it. */
int outdir_close(const char *tmp, const char *dir, unsigned wrote, int rc);

#endif
