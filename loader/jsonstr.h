/* SPDX-License-Identifier: GPL-2.0 */
/* JSON string output, shared by the loader's log reader and stackscan. */
#ifndef CHKWIN_JSONSTR_H
#define CHKWIN_JSONSTR_H

#include <stddef.h>
#include <stdio.h>

/*
 * A JSON string of at most len bytes of s (it may end sooner at a NUL).
 * Bytes outside printable ASCII become \u00XX escapes, so the output is
 * valid JSON whatever a damaged log or a symbol table holds.
 */
void json_str(FILE *out, const char *s, size_t len);

#endif /* CHKWIN_JSONSTR_H */
