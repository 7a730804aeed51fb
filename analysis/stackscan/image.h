/* The code to scan: executable regions of an aarch64 kernel file and the
 * functions in them, from an ELF symbol table or a System.map. */
#ifndef STACKSCAN_IMAGE_H
#define STACKSCAN_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#define ERRLEN 512

/* Writes the one-line reason into err (ERRLEN bytes); returns -1, so that
 * "return fail(err, ...)" reports and fails at once. */
int fail(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct region {
	char name[64];		/* section name, or "Image" */
	uint64_t addr;		/* load address (0 in a relocatable object) */
	const uint8_t *data;
	uint64_t size;
	/* ELF mapping symbols: where data ($d) and code ($x) start. */
	struct mark {
		uint64_t addr;
		int is_data;
	} *marks;		/* ascending addresses */
	size_t nmarks;
};

struct func {
	const char *name;
	size_t region;
	uint64_t start, end;	/* addresses, end exclusive */
	/* From a System.map, which has no sizes: the function may continue
	 * into the next symbol if control flows into it (a local label). */
	int maybe_continues;
};

struct image {
	uint8_t *buf;		/* whole file, decompressed if it was gzip */
	size_t len;
	const char *kind;	/* "vmlinux", "module", "object", "Image" */
	struct region *regions;
	size_t nregions;
	struct func *funcs;	/* by region, then start */
	size_t nfuncs;
	char *strings;		/* names read from a System.map */
};

/* Loads path (ELF or raw arm64 Image, either maybe gzip-compressed);
 * sysmap, if not NULL, gives the symbols instead of the ELF symbol table.
 * Returns 0, or -1 with a one-line reason in err. */
int image_load(struct image *img, const char *path, const char *sysmap,
	       char *err);
void image_free(struct image *img);

#endif
