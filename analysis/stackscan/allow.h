/* The allow-list: findings that are explained, one per line as
 * "FUNCTION[+0xOFFSET] REASON"; '#' starts a comment. */
#ifndef STACKSCAN_ALLOW_H
#define STACKSCAN_ALLOW_H

#include <stddef.h>
#include <stdint.h>

struct allow_entry {
	char *func;
	int has_offset;
	uint64_t offset;
	char *reason;
	int line;
	int used;
};

struct allow {
	struct allow_entry *e;
	size_t n;
	char *text;
};

/* Returns 0, or -1 with a one-line reason in err (ERRLEN bytes). */
int allow_load(struct allow *a, const char *path, char *err);
/* The entry that explains a finding at func+offset, or NULL. */
struct allow_entry *allow_match(struct allow *a, const char *func,
				uint64_t offset);
void allow_free(struct allow *a);

#endif
