/* files.h: paths and files: bounded path formatting that refuses to truncate, opening a file
 * for reading that must be a regular file, and the atomic publish (write a temporary file,
 * fsync it, rename it over the target, fsync the directory) every writer uses. */
#ifndef CB_FILES_H
#define CB_FILES_H

#include <stddef.h>
#include <stdio.h>

/* Bytes of a path buffer: Linux's PATH_MAX (a longer path cannot be opened; path_fmt refuses it),
 * and of a "path:line" place in a message. */
#define CB_PATH_MAX 4096
#define CB_WHERE_MAX (CB_PATH_MAX + 32)

/* Formats a path into out (n bytes). A path that does not fit is an error naming its start
 * (never a silently truncated path). Returns 0 or CB_EUSAGE. */
int path_fmt(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Opens `path` for reading ("rb"); a directory, a missing or unreadable file is an error naming
 * the path and the reason. Returns the stream or NULL (error printed). */
FILE *file_open_read(const char *path);
/* The whole of `path` (opened by file_open_read) in a new buffer, its *n bytes followed by a NUL.
 * A file over max_bytes, a read error or no memory is an error naming the path. Returns the buffer
 * (the caller frees it) or NULL (error printed). */
char *file_read_all(const char *path, size_t max_bytes, size_t *n);
/* Writes `tmp` durably and renames it over `path` (fsync of file and directory), giving it the
 * mode of the file it replaces (a new file keeps the umask's); `tmp` is removed on failure.
 * Returns 0 or CB_EFAIL. */
int file_commit(const char *tmp, const char *path);

/* 1 when s is a process id as costbench writes one into a file name (decimal digits, no sign, no
 * leading zero): *pid receives it. */
int file_parse_pid(const char *s, long *pid);

/* A user's file replaced whole (file_out_begin, write o->tmp, file_out_commit or file_out_abort):
 *  - a symbolic link is written through: its target (followed to the end) is the file replaced;
 *  - a read-only target (no write permission bit, or not writable by this process) is refused,
 *    and so is one with other hard links (the replacement would split them): one error naming
 *    the file, and the file stays as it was;
 *  - the replacement gets the target's mode (file_commit);
 *  - the temporary is TARGET.tmp.PID, held under an flock until it is renamed or removed; a
 *    TARGET.tmp.PID that no process holds is a killed write's and is removed (with a note) by the
 *    next write of TARGET, as checkpoint saves' temporaries are (model/checkpoint.c). */
typedef struct file_out {
    char path[CB_PATH_MAX]; /* the file replaced: the one named, its symbolic links followed */
    char tmp[CB_PATH_MAX];  /* path.tmp.PID, created empty */
    int lock_fd;            /* holds the temporary's flock; -1 when none */
} file_out;

/* Checks the target `path` and creates the temporary. Returns 0, CB_EUSAGE (a path too long) or
 * CB_EFAIL (a read-only or hard-linked target, a file that cannot be written; error printed). */
int file_out_begin(file_out *o, const char *path);
/* Publishes o->tmp over o->path (file_commit) and releases the temporary. Returns 0 or CB_EFAIL. */
int file_out_commit(file_out *o);
/* Removes the temporary (safe after a failed begin or a commit). */
void file_out_abort(file_out *o);
/* The target checks alone: `path` with its symbolic links followed into resolved (n bytes),
 * refused when read-only or hard-linked. For a file written in place (a log appended to as it
 * grows). Returns 0, CB_EUSAGE (a path too long) or CB_EFAIL. */
int file_out_target(const char *path, char *resolved, size_t n);

#endif
