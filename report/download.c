#include "download.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "../common/err.h"

/* Where the bytes go: a file, or a growing buffer; both capped at max bytes. */
typedef struct {
    FILE *f;
    char *buf;
    size_t len, cap, max;
    int over; /* 1 when the answer passed max */
} sink;

static size_t sink_write(char *data, size_t size, size_t nmemb, void *user)
{
    sink *s = user;
    size_t n = size * nmemb;
    if (n > s->max - s->len) {
        s->over = 1;
        return 0; /* libcurl stops with CURLE_WRITE_ERROR */
    }
    if (s->f) {
        if (fwrite(data, 1, n, s->f) != n) return 0;
    } else {
        if (s->len + n + 1 > s->cap) {
            size_t cap = s->cap ? s->cap : 1 << 16;
            while (cap < s->len + n + 1) cap *= 2;
            char *b = realloc(s->buf, cap);
            if (!b) return 0;
            s->buf = b;
            s->cap = cap;
        }
        memcpy(s->buf + s->len, data, n);
    }
    s->len += n;
    return n;
}

static int curl_ready(void)
{
    static int done;
    if (!done && curl_global_init(CURL_GLOBAL_DEFAULT) != 0) return err_msg("libcurl: cannot initialise");
    done = 1;
    return 0;
}

/* One GET into s: 0, or CB_EFAIL after one error line naming the url. */
static int download(const char *url, sink *s)
{
    if (curl_ready() != 0) return CB_EFAIL;
    CURL *h = curl_easy_init();
    if (!h) return err_msg("%s: libcurl: cannot start a transfer", url);
    char why[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "costbench");
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, why);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(h);
    if (rc == CURLE_OK && status == 200 && s->f && fflush(s->f) != 0) return err_msg("%s: cannot write the download", url);
    if (rc == CURLE_OK && status == 200) return 0;
    if (s->over) return err_msg("%s: the answer is over %zu bytes: refused", url, s->max);
    if (rc == CURLE_OK) return err_msg("%s: HTTP status %ld (expected 200)", url, status);
    char st[48] = "";
    if (status) snprintf(st, sizeof st, ", HTTP status %ld", status);
    return err_msg("%s: %s (libcurl error %d%s)", url, *why ? why : curl_easy_strerror(rc), (int)rc, st);
}

int download_to_file(const char *url, FILE *f, size_t max_bytes)
{
    sink s = {.f = f, .max = max_bytes};
    return download(url, &s);
}

int download_to_mem(const char *url, char **text, size_t *len, size_t max_bytes)
{
    sink s = {.max = max_bytes};
    int rc = download(url, &s);
    if (rc == 0 && !s.buf) s.buf = calloc(1, 1); /* an empty answer */
    if (rc == 0 && !s.buf) rc = err_msg("out of memory");
    if (rc != 0) {
        free(s.buf);
        *text = NULL;
        *len = 0;
        return rc;
    }
    s.buf[s.len] = '\0';
    *text = s.buf;
    *len = s.len;
    return 0;
}
