/* test_pricesupdate.c: `costbench prices update` against a tiny HTTP server on 127.0.0.1 (a port
 * the kernel picks; a forked child answering one request per connection) serving real catalogue
 * excerpts (tests/catalogs/update/README.md, data/catalogs/README.md): the SkyPilot catalogues of
 * four clouds, three pages of an Azure retail answer (NextPageLink), a redirect, an answer cut
 * short of its Content-Length, a JSON page cut in half, a 500. Nothing leaves the loopback. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static char out[32768], err[8192];

typedef struct {
    pid_t pid;
    int port;
    char log[4096]; /* every request line the server read, one a line */
} http_srv;

/* The file a path names, or NULL. */
static const char *srv_file(const char *path, const char *query)
{
    static const char *const map[][2] = {
        {"/catalogs/v8/aws/vms.csv", "data/catalogs/aws/vms.csv"},
        {"/catalogs/v8/azure/vms.csv", "data/catalogs/azure/vms.csv"},
        {"/catalogs/v8/gcp/vms.csv", "data/catalogs/gcp/vms.csv"},
        {"/catalogs/v8/lambda/vms.csv", "data/catalogs/lambda/vms.csv"},
        {"/offers/v1.0/aws/AmazonEC2/current/us-east-1/index.csv", "tests/catalogs/aws-offer.csv"},
    };
    if (strcmp(path, "/api/retail/prices") == 0)
        return strstr(query, "skip=200")   ? "tests/catalogs/update/azure-page3.json"
               : strstr(query, "skip=100") ? "tests/catalogs/update/azure-page2.json"
                                           : "tests/catalogs/update/azure-page1.json";
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(path, map[i][0]) == 0) return map[i][1];
    return NULL;
}

static void srv_send(int fd, const char *head, const char *body, size_t n)
{
    if (write(fd, head, strlen(head)) < 0) return;
    if (n && write(fd, body, n) < 0) return;
}

/* One request: GET PATH. Prefixes: /moved/X answers 302 to /X; /cut/X sends X with a Content-Length
 * 100 bytes larger than what follows; /half/X sends X's first half with no Content-Length;
 * /fail/X answers 500; /wrong/X sends an Azure page whatever X asks for. */
static void srv_answer(int fd, int port, FILE *log)
{
    char req[8192];
    ssize_t n = read(fd, req, sizeof req - 1);
    if (n <= 0) return;
    req[n] = '\0';
    char path[4096] = "", head[8192];
    if (sscanf(req, "GET %4095s", path) != 1) return;
    fprintf(log, "GET %s\n", path);
    fflush(log);
    char *q = strchr(path, '?');
    const char *query = q ? q + 1 : "";
    if (q) *q = '\0';
    int mode = 0; /* 1 moved, 2 cut, 3 half, 4 fail, 5 wrong */
    static const char *const pre[] = {"/moved/", "/cut/", "/half/", "/fail/", "/wrong/"};
    for (int k = 0; k < 5 && !mode; k++)
        if (strncmp(path, pre[k], strlen(pre[k])) == 0) mode = k + 1;
    const char *rest = mode ? path + strlen(pre[mode - 1]) - 1 : path;
    if (mode == 1) {
        snprintf(head, sizeof head, "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:%d%s%s%s\r\nContent-Length: 0\r\n"
                 "Connection: close\r\n\r\n", port, rest, q ? "?" : "", query);
        srv_send(fd, head, NULL, 0);
        return;
    }
    if (mode == 4) {
        srv_send(fd, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\nConnection: close\r\n\r\n", "oops\n",
                 5);
        return;
    }
    const char *file = mode == 5 ? "tests/catalogs/update/azure-page1.json" : srv_file(rest, query);
    char body[65536];
    size_t len = 0;
    FILE *f = file ? fopen(file, "rb") : NULL;
    if (f) len = fread(body, 1, sizeof body, f);
    if (f) fclose(f);
    if (!f) {
        srv_send(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", NULL, 0);
        return;
    }
    if (mode == 3) {
        srv_send(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", body, len / 2);
        return;
    }
    snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
             len + (mode == 2 ? 100 : 0));
    srv_send(fd, head, body, len);
}

/* Starts the server (a child process). Returns 0, or -1 after a failed check. */
static int srv_start(http_srv *s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
        CHECK(0, "cannot listen on 127.0.0.1");
        if (fd >= 0) close(fd);
        return -1;
    }
    s->port = ntohs(a.sin_port);
    snprintf(s->log, sizeof s->log, "%s", test_path("http.log"));
    fflush(stdout);
    fflush(stderr);
    s->pid = fork();
    if (s->pid == 0) {
        alarm(300); /* never outlives a test run that died before srv_stop */
        FILE *log = fopen(s->log, "w");
        for (;;) {
            int c = accept(fd, NULL, NULL);
            if (c < 0) continue;
            if (log) srv_answer(c, s->port, log);
            close(c);
        }
    }
    close(fd);
    CHECK(s->pid > 0, "fork");
    return s->pid > 0 ? 0 : -1;
}

static void srv_stop(http_srv *s)
{
    if (s->pid <= 0) return;
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}

/* prices update --cloud C [extra...] --url-base http://127.0.0.1:PORT<prefix> --out out_path. */
static int update(const http_srv *s, const char *prefix, const char *out_path, const char *const *extra)
{
    char base[128];
    snprintf(base, sizeof base, "http://127.0.0.1:%d%s", s->port, prefix);
    const char *a[24] = {"prices", "update"};
    int k = 2;
    for (int i = 0; extra[i] && k < 18; i++) a[k++] = extra[i];
    a[k++] = "--url-base", a[k++] = base, a[k++] = "--out", a[k++] = out_path, a[k] = NULL;
    return cli_run(a, out, sizeof out, err, sizeof err);
}

static void copy_file(const char *from, const char *to)
{
    static char buf[1 << 16];
    slurp(from, buf, sizeof buf);
    write_text(to, buf);
}

/* SkyPilot: four clouds' real catalogues; each row as data/prices.csv holds it, now dated today
 * and naming the URL. The redirect is followed (the server's log shows both requests). */
static void t_skypilot(void)
{
    http_srv s = {0};
    if (srv_start(&s) != 0) return;
    const char *p = test_path("prices-sky.csv");
    copy_file("data/prices.csv", p);
    const char *lambda[] = {"--cloud", "lambda", NULL}, *gcp[] = {"--cloud", "gcp", NULL},
               *aws[] = {"--cloud", "aws", NULL}, *az[] = {"--cloud", "azure", "--source", "skypilot", NULL};
    int rc = update(&s, "/moved", p, lambda);
    CHECK(rc == 0, "lambda: rc %d: %s", rc, err);
    /* data/catalogs/lambda/vms.csv: 6 rows, 2 in us-east-1 (lines 2 and 5), the others elsewhere */
    CHECK(strstr(out, "/catalogs/v8/lambda/vms.csv: read 6 rows; kept 2 price rows; dropped: not in --regions (4)"),
          "%s", out);
    static char text[1 << 16], log[4096];
    slurp(p, text, sizeof text);
    CHECK(strstr(text, "lambda,gpu_8x_h100_sxm5,us-east-1,on_demand,23.92,20") &&
              strstr(text, "/moved/catalogs/v8/lambda/vms.csv (skypilot, line 5)\""),
          "%s", text);
    CHECK(strstr(text, "# replaced by http://127.0.0.1:") && strstr(out, "refreshed: "), "%s\n%s", text, out);
    slurp(s.log, log, sizeof log);
    CHECK(strstr(log, "GET /moved/catalogs/v8/lambda/vms.csv\nGET /catalogs/v8/lambda/vms.csv\n"), "%s", log);
    rc = update(&s, "", p, gcp);
    /* host + 8 GPUs of the same zone: 5.91582 + 23.47126 = 29.38708 (data/catalogs/README.md) */
    CHECK(rc == 0 && strstr(out, "refreshed: ") && strstr(out, "a2-highgpu-8g us-central1 on_demand 29.38708 $/h"),
          "gcp: rc %d: %s %s", rc, out, err);
    rc = update(&s, "", p, aws);
    /* p4d.24xlarge us-east-1: 32.7726 on demand; spot: the lowest zone, 6.8179 (use1-az6) */
    CHECK(rc == 0 && strstr(out, "p4d.24xlarge us-east-1 spot 6.8179 $/h"), "aws: rc %d: %s %s", rc, out, err);
    rc = update(&s, "", p, az);
    /* Standard_ND96isr_H100_v5 eastus: 98.32 (line 8; its SpotPrice equals its Price in this catalogue) */
    CHECK(rc == 0 && strstr(out, "Standard_ND96isr_H100_v5 eastus on_demand 98.32 $/h"), "azure: rc %d: %s %s", rc, out,
          err);
    slurp(p, text, sizeof text);
    /* every catalogue row refreshed: the only old rows left are inside the '# replaced by' lines */
    CHECK(count_of(text, "2025,\"data/catalogs/") == 24 && count_of(text, "# replaced by") == 24, "%s", text);
    const char *l[] = {"prices", "--prices", p, "--instance", "p5.48xlarge", "--pricing", "on_demand", NULL};
    rc = cli_run(l, out, sizeof out, err, sizeof err);
    CHECK(rc == 0 && strstr(out, " 98.32 ") && count_lines(out) == 2 && !strstr(out, "[!]"), "rc %d: %s", rc, out);
    srv_stop(&s);
}

/* Azure: three pages (NextPageLink on the public host, ":443", sent to --url-base), one answer
 * imported: F16s Windows (pages 1 and 3) dropped; E64 v4 1-year reservation 25007 / 8760 =
 * 2.85468037 $/h. */
static void t_azure_pages(void)
{
    http_srv s = {0};
    if (srv_start(&s) != 0) return;
    const char *p = test_path("prices-az.csv");
    copy_file("data/prices.csv", p);
    const char *az[] = {"--cloud", "azure", "--region", "southcentralus", "--all-instances", NULL};
    int rc = update(&s, "", p, az);
    CHECK(rc == 0, "rc %d: %s", rc, err);
    CHECK(strstr(out, "azure southcentralus: 3 pages, 3 items"), "%s", out);
    CHECK(strstr(out, "read 3 rows; kept 1 price rows; dropped: Windows (2)"), "%s", out);
    static char text[1 << 16], log[4096];
    slurp(p, text, sizeof text);
    CHECK(strstr(text, "azure,Standard_E64_v4,southcentralus,reserved_1y,2.85468037,20"), "%s", text);
    slurp(s.log, log, sizeof log);
    CHECK(strstr(log, "GET /api/retail/prices?$filter=serviceName%20eq%20%27Virtual%20Machines%27%20and%20"
                      "armRegionName%20eq%20%27southcentralus%27\n") &&
              strstr(log, "$skip=100\n") && strstr(log, "$skip=200\n"),
          "%s", log);
    /* the page cap: two pages of three is not the answer */
    copy_file("data/prices.csv", p);
    const char *cap[] = {"--cloud", "azure", "--region", "southcentralus", "--all-instances", "--max-pages", "2", NULL};
    rc = update(&s, "", p, cap);
    CHECK(rc == 1 && strstr(err, "more pages after 2 (--max-pages): nothing written"), "rc %d: %s", rc, err);
    srv_stop(&s);
}

/* Failures: a 500, an answer short of its Content-Length, a JSON page cut in half, a 404, a
 * catalogue the importer refuses (JSON where a CSV is expected): one error (naming the URL, or for
 * the refused catalogue the importer's, then a note naming the URL), exit non-zero, the price file byte-identical. */
static void t_failures(void)
{
    http_srv s = {0};
    if (srv_start(&s) != 0) return;
    const char *p = test_path("prices-fail.csv");
    copy_file("data/prices.csv", p);
    static char before[1 << 16], after[1 << 16];
    slurp(p, before, sizeof before);
    const char *lambda[] = {"--cloud", "lambda", NULL}, *all[] = {NULL};
    const char *az[] = {"--cloud", "azure", "--region", "southcentralus", "--all-instances", NULL};
    struct {
        const char *prefix;
        const char *const *extra;
        int rc;
        const char *msg;
    } cases[] = {
        {"/fail", lambda, 1, "/fail/catalogs/v8/lambda/vms.csv: HTTP status 500 (expected 200)"},
        {"/cut", lambda, 1, "/cut/catalogs/v8/lambda/vms.csv: transfer closed with 100 bytes remaining to read"},
        {"/half", az, 2, "/half/api/retail/prices?$filter="},
        {"/fail", all, 1, "/fail/catalogs/v8/aws/vms.csv: HTTP status 500"},
        {"/nowhere", lambda, 1, "HTTP status 404"},
        {"/wrong", lambda, 2, "/wrong/catalogs/v8/lambda/vms.csv as downloaded: refused, nothing written"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = update(&s, cases[i].prefix, p, cases[i].extra);
        slurp(p, after, sizeof after);
        CHECK(rc == cases[i].rc && strstr(err, cases[i].msg) && count_of(err, "error: ") == 1 &&
                  strstr(err, "is unchanged"),
              "case %zu: rc %d: %s", i, rc, err);
        CHECK(strcmp(before, after) == 0, "case %zu: the price file changed", i);
    }
    srv_stop(&s);
    const char *bad[][5] = {{"prices", "update", "--cloud", "oracle", NULL},
                            {"prices", "update", "--region", "eastus", NULL},
                            {"prices", "update", "--cloud", "gcp", "--source"}};
    CHECK(cli_run(bad[0], out, sizeof out, err, sizeof err) == 2 && strstr(err, "flag '--cloud': expected aws"), "%s",
          err);
    CHECK(cli_run(bad[1], out, sizeof out, err, sizeof err) == 2 && strstr(err, "give it with --cloud"), "%s", err);
    const char *v[] = {"prices", "update", "--cloud", "gcp", "--source", "vendor", NULL};
    CHECK(cli_run(v, out, sizeof out, err, sizeof err) == 2 && strstr(err, "for --cloud aws or azure only"), "%s", err);
}

const test_case tests_pricesupdate[] = {
    {"prices update: skypilot catalogues of four clouds over HTTP, a redirect followed, rows refreshed",
     t_skypilot},
    {"prices update: azure retail pages followed (NextPageLink) and imported as one answer, page cap", t_azure_pages},
    {"prices update: 500, short answer, cut JSON, 404, a refused catalogue: one error, the price file unchanged",
     t_failures},
    {NULL, NULL},
};
