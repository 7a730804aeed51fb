/* Printing the findings, as text lines or one JSON object. */
#ifndef STACKSCAN_REPORT_H
#define STACKSCAN_REPORT_H

#include "allow.h"
#include "scan.h"

#include <stdio.h>

struct report {
	const char *path;
	const char *symbols;	/* "symtab" or the System.map path */
	const struct image *img;
	const struct finding *f;
	size_t n;
	const struct scan_stats *st;
	struct allow *allow;	/* may have no entries */
	const char *module;	/* a module's name (windows file), or NULL */
};

/* Prints r; returns how many findings the allow-list does not explain. */
size_t report_text(FILE *out, struct scanner *s, const struct report *r);
size_t report_json(FILE *out, struct scanner *s, const struct report *r);
/* The findings the allow-list does not explain as a windows file
 * (docs/windows.md): each window runs from the instruction after the one
 * that raised sp to the access.  Returns how many windows it wrote. */
size_t report_windows(FILE *out, struct scanner *s, const struct report *r);

#endif
