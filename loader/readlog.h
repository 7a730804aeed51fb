/* SPDX-License-Identifier: GPL-2.0 */
/* chkwin --read: decode a log to text, JSON lines or CSV. */
#ifndef CHKWIN_READLOG_H
#define CHKWIN_READLOG_H

#include "opts.h"

/* Exit status: 0 complete, 3 truncated (all whole records printed), 1 corrupt. */
int chkwin_read_log(const char *path, enum chkwin_format format);

#endif /* CHKWIN_READLOG_H */
