/* err.h: one-line error messages and the project's return codes.
 * Functions that can fail on input print one message and return a negative code;
 * only main() turns codes into exit statuses (0 ok, 1 runtime failure, 2 usage). */
#ifndef CB_ERR_H
#define CB_ERR_H

enum {
    CB_OK = 0,
    CB_EFAIL = -1,  /* runtime or validation failure: exit 1 */
    CB_EUSAGE = -2, /* bad flag, bad size, unknown name: exit 2 */
};

/* "error: <formatted>\n" on stderr. Returns CB_EFAIL for convenience. */
int err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, but returns CB_EUSAGE. */
int err_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "hint: <formatted>\n" on stderr. */
void err_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "warning: <formatted>\n" on stderr. */
void err_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Map a return code to an exit status. */
int err_exit_status(int rc);

/* Under mpirun every rank runs the same program on the same input, so the same error would be
 * printed once per rank: only rank 0 prints (the rank is read from the launcher's environment);
 * other ranks hold their messages, and main releases them (prefixed "rank N:") only when the
 * failure turns out to be theirs alone (rank 0 did not end the job first). */
int err_rank(void);
void err_release_held(void);

#endif
