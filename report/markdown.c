#include "markdown.h"

#include <string.h>

const char *markdown_escape(char *dst, size_t n, const char *s)
{
    size_t k = 0;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int esc = strchr("\\|*_`[]<>~&", ch) != NULL;
        size_t len = 1 + (size_t)esc;
        if (ch >= 0xC0) /* a UTF-8 lead byte: its character whole, or not at all */
            while ((s[len] & 0xC0) == 0x80) len++;
        if (k + len >= n) break;
        if (esc) dst[k++] = '\\';
        if (ch < 0x20 || ch == 0x7F) ch = ' ';
        dst[k++] = (char)ch;
        for (size_t i = 1; ch >= 0xC0 && i < len; i++) dst[k++] = *++s;
    }
    dst[k] = '\0';
    return dst;
}
