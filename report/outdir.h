/* outdir.h: the output directory of `costbench report` and of `costbench trajectory`, which
 * appears complete or not at all and replaces only a directory costbench wrote. The command
 * writes its files into a new temporary directory next to --out; outdir_close adds the marker
 * (`.costbench-report`, `.costbench-trajectory`: the names of the files written) and renames it
 * to --out. An absent or empty --out is taken; a directory of the same kind is replaced (moved
 * aside, then only the files its marker lists deleted) when it holds nothing else, as is one of a
 * costbench that wrote no marker (only the kind's own file names, its Markdown file starting with
 * its title). Any other --out is refused (CB_EUSAGE, one error naming it and a file costbench did
 * not write, and a hint), untouched: costbench never deletes a file it did not write. */
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

/* The files `costbench trajectory` writes (bits of a mask as above), and trajectory.md's title. */
enum { OUT_TRAJ_MD, OUT_TRAJ_CSV, OUT_TRAJ_LOSS, OUT_TRAJ_GN, OUT_TRAJ_NNAMES };
#define OUT_TRAJ_MD_TITLE "# Loss and gradient-norm trajectories across precisions"

/* A kind of output directory: the command that writes it, the files it may hold (at most 32), its
 * Markdown file, that file's first line and the marker's name. */
typedef struct {
    const char *what;         /* "report": in messages ("a costbench report directory") */
    const char *const *names; /* (nnames) */
    int nnames, md;           /* names[md]: the Markdown file, whose first line is md_title */
    const char *md_title;
    const char *marker;       /* ".costbench-report" */
} outdir_kind;
extern const outdir_kind outdir_report, outdir_trajectory;

/* Checks `out_dir` (refused as above before any work is done) and makes the temporary directory:
 * `dir` gets out_dir without trailing slashes, `tmp` the new directory's name. Returns 0 or an
 * error code. */
int outdir_open(const outdir_kind *k, const char *out_dir, char *dir, size_t ndir, char *tmp, size_t ntmp);
/* After the command wrote into `tmp` (rc 0; `wrote`: the bits of k->names it wrote): the marker,
 * then `tmp` renamed to `dir`. When rc or any of these fails, tmp's files and tmp are removed.
 * Returns rc, or the error that stopped it. */
int outdir_close(const outdir_kind *k, const char *tmp, const char *dir, unsigned wrote, int rc);

#endif
