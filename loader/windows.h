/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The windows file (docs/windows.md): read, then placed through kallsyms.
 * analysis/windows.py reads the same format; the tests hold the two to it.
 */
#ifndef CHKWIN_WINDOWS_H
#define CHKWIN_WINDOWS_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "chkwin.h"
#include "kallsyms.h"

#define CHKWIN_WINDOWS_MAGIC	"chkwin-windows 1"
#define CHKWIN_WINDOWS_LINE_MAX	1024

struct chkwin_location {
	char module[56];	/* "" for the core kernel */
	char symbol[128];
	uint32_t offset;
};

struct chkwin_watch {
	char name[CHKWIN_WATCH_NAME_MAX + 1];
	struct chkwin_location first, last;
	uint64_t size;		/* size=, 0 when the file gives none */
	uint64_t first_addr, last_addr;	/* placed: both inclusive */
};

struct chkwin_windows {
	struct chkwin_watch *w;
	int n;
};

/* Reads path; 0, or -1 with one line in err naming the file's line. */
int chkwin_windows_read(const char *path, struct chkwin_windows *ws, char *err,
			size_t errlen);
/*
 * Places every window through ks and sorts them by first address; 0, or
 * -1 with one line in err naming the window: an unknown symbol, a module
 * that is not loaded, a window past its function's end, two overlapping.
 */
int chkwin_windows_place(struct chkwin_windows *ws, const struct ksyms *ks, char *err,
			 size_t errlen);
void chkwin_windows_free(struct chkwin_windows *ws);

#endif /* CHKWIN_WINDOWS_H */
