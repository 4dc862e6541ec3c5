/* markdown.h: text from input files (labels, precisions, model and CPU names, sources) written
 * into Markdown, shown as written: every cell of a table the report or the trajectories write goes
 * through markdown_escape, so a '|' cannot add a column and '*', '_' or '`' cannot start markup. */
#ifndef CB_MARKDOWN_H
#define CB_MARKDOWN_H

#include <stddef.h>

/* `s` into dst (n bytes, n >= 1) with a backslash before each of \ | * _ ` [ ] < > ~ & (CommonMark
 * escapes any ASCII punctuation; GitHub's tables need '\|' even in code) and line breaks, tabs and
 * other control characters as spaces. Text that does not fit is cut before an escape or a UTF-8
 * character it would split. Returns dst. */
const char *markdown_escape(char *dst, size_t n, const char *s);

#endif
