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
/* Writes `tmp` durably and renames it over `path` (fsync of file and directory); `tmp` is
 * removed on failure. Returns 0 or CB_EFAIL. */
int file_commit(const char *tmp, const char *path);

#endif
