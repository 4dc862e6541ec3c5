/* download.h: HTTP(S) downloads with libcurl (the one place that links it). Redirects are
 * followed (at most 5), only http and https are spoken, a transfer that stalls (under 1 byte/s
 * for 60 s) or that ends before its Content-Length is a failure, and any HTTP status but 200 is
 * one. */
#ifndef CB_DOWNLOAD_H
#define CB_DOWNLOAD_H

#include <stddef.h>
#include <stdio.h>

/* Downloads url into f (at most max_bytes). Returns 0, or CB_EFAIL after one error line naming
 * the url and the HTTP status or libcurl's reason; f then holds a part or nothing. */
int download_to_file(const char *url, FILE *f, size_t max_bytes);
/* Downloads url into a new buffer (*len bytes followed by a NUL; the caller frees it). Returns 0
 * or CB_EFAIL (one error line, as download_to_file; *text is then NULL). */
int download_to_mem(const char *url, char **text, size_t *len, size_t max_bytes);

#endif
