/* SPDX-License-Identifier: GPL-2.0 */
/* /proc/kallsyms, sorted by address, for the addresses the BPF side needs. */
#ifndef CHKWIN_KALLSYMS_H
#define CHKWIN_KALLSYMS_H

#include <stdint.h>
#include <stddef.h>

struct ksym {
	uint64_t addr;
	char type;		/* nm-style: t/T text, d/D data, ... */
	char *name;
	char *module;		/* "ext4" for "[ext4]", NULL for vmlinux */
};

struct ksyms {
	struct ksym *syms;	/* by address */
	size_t count;
	struct ksym **by_name;	/* the same, by name, then address */
};

/* 0 or -errno with a message; addresses all zero (kptr_restrict) is an error. */
int ksyms_load(struct ksyms *k, const char *path);
void ksyms_free(struct ksyms *k);

/* Address of name, or 0. */
uint64_t ksyms_addr(const struct ksyms *k, const char *name);

/*
 * The symbol called name: the only one, or where several share the name
 * (static functions), the one in module (NULL: the core kernel).  NULL if
 * none fits; *count gets how many share the name.
 */
const struct ksym *ksyms_pick(const struct ksyms *k, const char *name,
			      const char *module, int *count);

/*
 * The text symbol called name in module (NULL: the core kernel) and how
 * many such there are in *matches: NULL unless exactly one.
 */
const struct ksym *ksyms_text_in(const struct ksyms *k, const char *name,
				 const char *module, int *matches);
/*
 * Of the core kernel's symbols called name, the one whose neighbours (the
 * symbols around it up to a global text symbol or another called name)
 * include marker: the static function of one source file where several
 * files have one of that name, all built in.  NULL if not exactly one.
 */
const struct ksym *ksyms_pick_near(const struct ksyms *k, const char *name,
				   const char *marker);
/* The symbol at or below addr (the function holding it), or NULL. */
const struct ksym *ksyms_at(const struct ksyms *k, uint64_t addr);
/* Whether any symbol belongs to module (it is loaded). */
int ksyms_has_module(const struct ksyms *k, const char *module);

/*
 * Start and end of the code named name: end is the next symbol above it
 * that is not one of its own inner labels (name_...), since kallsyms has no
 * sizes.  Returns 0 when found.
 */
int ksyms_range(const struct ksyms *k, const char *name, uint64_t *start, uint64_t *end);
/* The same for one symbol (from ksyms_pick). */
int ksyms_range_of(const struct ksyms *k, const struct ksym *s, uint64_t *start,
		   uint64_t *end);

#endif /* CHKWIN_KALLSYMS_H */
