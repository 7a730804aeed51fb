/* The analysis: within each function, follow sp and the registers derived
 * from it, and find memory accesses that are certainly below sp. */
#ifndef STACKSCAN_SCAN_H
#define STACKSCAN_SCAN_H

#include "image.h"

#include <capstone/capstone.h>

struct finding {
	size_t func;		/* index into image.funcs */
	uint64_t addr;		/* the access */
	uint64_t release;	/* the last instruction that raised sp */
	int has_release;	/* 0: sp was never raised before the access */
	int64_t below_min, below_max;	/* bytes between address and sp */
};

struct scan_stats {
	size_t functions, instructions, undecoded, unreached;
};

struct scanner;

struct scanner *scanner_new(char *err);
void scanner_free(struct scanner *s);
/* Scans every function of img.  Appends to *out (grown with realloc;
 * *nout entries).  Returns 0, or -1 with err set. */
int scan_image(struct scanner *s, const struct image *img,
	       struct finding **out, size_t *nout, struct scan_stats *st,
	       char *err);
/* The instruction at addr as text ("ldr w0, [x19, #8]"), for reports. */
void scanner_insn_text(struct scanner *s, const struct image *img,
		       size_t region, uint64_t addr, char *buf, size_t len);

#endif
