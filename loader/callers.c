// SPDX-License-Identifier: GPL-2.0
/*
 * Caller kinds without the lab tracepoints.  A stock kernel inlines
 * ext4_chksum() into the ext4 helpers that checksum each kind of metadata,
 * so the kind of a chksum_update() call is told by the innermost ext4
 * function on its stack (the kprobe walks it): ext4_inode_csum is an
 * inode, __ext4_iget the inode's seed, and so on.  This file turns kallsyms
 * into the sorted address ranges the BPF side searches: every ext4
 * function, each with the kind of its helper or "unknown".
 */
#include <stdio.h>
#include <string.h>

#include "callers.h"

/* enum ext4_chksum_caller of the lab patch, for kernels whose BTF lacks it. */
static const char *const default_callers[] = {
	"EXT4_CHKSUM_SUPERBLOCK", "EXT4_CHKSUM_GROUP_DESC", "EXT4_CHKSUM_BITMAP",
	"EXT4_CHKSUM_INODE", "EXT4_CHKSUM_SEED", "EXT4_CHKSUM_EXTENT",
	"EXT4_CHKSUM_DIR", "EXT4_CHKSUM_XATTR", "EXT4_CHKSUM_MMP",
	"EXT4_CHKSUM_ORPHAN", "EXT4_CHKSUM_FAST_COMMIT",
};

/*
 * The functions of Linux 6.1's fs/ext4 that call ext4_chksum(), and the
 * callers that absorb some of them when inlined in Debian's build (seen in
 * its kallsyms): __read_extent_tree_block (the extent block verify),
 * ext4_handle_dirty_dirblock (the dirblock set), ext4_fill_super (the
 * superblock seed), ext4_fc_replay (the replay scan).  A call whose
 * innermost ext4 function is none of these stays unknown.
 */
static const struct {
	const char *func;
	const char *caller;
} helpers[] = {
	{ "ext4_superblock_csum", "EXT4_CHKSUM_SUPERBLOCK" },
	{ "ext4_group_desc_csum", "EXT4_CHKSUM_GROUP_DESC" },
	{ "ext4_inode_bitmap_csum_verify", "EXT4_CHKSUM_BITMAP" },
	{ "ext4_inode_bitmap_csum_set", "EXT4_CHKSUM_BITMAP" },
	{ "ext4_block_bitmap_csum_verify", "EXT4_CHKSUM_BITMAP" },
	{ "ext4_block_bitmap_csum_set", "EXT4_CHKSUM_BITMAP" },
	{ "ext4_inode_csum", "EXT4_CHKSUM_INODE" },
	{ "ext4_inode_csum_set", "EXT4_CHKSUM_INODE" },
	{ "__ext4_iget", "EXT4_CHKSUM_SEED" },
	{ "__ext4_new_inode", "EXT4_CHKSUM_SEED" },
	{ "ext4_reset_inode_seed", "EXT4_CHKSUM_SEED" },
	{ "ext4_init_metadata_csum", "EXT4_CHKSUM_SEED" },
	{ "__ext4_fill_super", "EXT4_CHKSUM_SEED" },
	{ "ext4_fill_super", "EXT4_CHKSUM_SEED" },
	{ "ext4_extent_block_csum", "EXT4_CHKSUM_EXTENT" },
	{ "ext4_extent_block_csum_set", "EXT4_CHKSUM_EXTENT" },
	{ "ext4_extent_block_csum_verify", "EXT4_CHKSUM_EXTENT" },
	{ "__read_extent_tree_block", "EXT4_CHKSUM_EXTENT" },
	{ "ext4_dirblock_csum", "EXT4_CHKSUM_DIR" },
	{ "ext4_dirblock_csum_verify", "EXT4_CHKSUM_DIR" },
	{ "ext4_dirblock_csum_set", "EXT4_CHKSUM_DIR" },
	{ "ext4_handle_dirty_dirblock", "EXT4_CHKSUM_DIR" },
	{ "ext4_dx_csum", "EXT4_CHKSUM_DIR" },
	{ "ext4_xattr_block_csum", "EXT4_CHKSUM_XATTR" },
	{ "ext4_xattr_inode_hash", "EXT4_CHKSUM_XATTR" },
	{ "ext4_mmp_csum", "EXT4_CHKSUM_MMP" },
	{ "ext4_orphan_file_block_csum_verify", "EXT4_CHKSUM_ORPHAN" },
	{ "ext4_orphan_file_block_trigger", "EXT4_CHKSUM_ORPHAN" },
	{ "ext4_fc_memcpy", "EXT4_CHKSUM_FAST_COMMIT" },
	{ "ext4_fc_memzero", "EXT4_CHKSUM_FAST_COMMIT" },
	{ "ext4_fc_replay_scan", "EXT4_CHKSUM_FAST_COMMIT" },
	{ "ext4_fc_replay", "EXT4_CHKSUM_FAST_COMMIT" },
};

#define NHELPERS (sizeof(helpers) / sizeof(helpers[0]))
#define NDEFAULT (sizeof(default_callers) / sizeof(default_callers[0]))

static bool is_text(const struct ksym *s)
{
	return s->type == 't' || s->type == 'T';
}

/* ext4's code: the module's text, or (built in) its ext4_ functions. */
static bool is_ext4(const struct ksym *s)
{
	if (s->module)
		return !strcmp(s->module, "ext4");
	return !strncmp(s->name, "ext4_", 5) || !strncmp(s->name, "__ext4_", 7);
}

/* A wrapper the walk passes through: ext4_chksum() itself, where out of line. */
static bool in_funcs(const struct chkwin_plan *p, uint64_t addr)
{
	int i;

	for (i = 0; i < CHKWIN_FUNCS; i++)
		if (p->func[i].name && addr >= p->func[i].start && addr < p->func[i].end)
			return true;
	return false;
}

/* The caller kind of a function, by its name without a .isra/.part suffix. */
static uint16_t kind_of(const struct chkwin_plan *p, const char *name)
{
	size_t len = strcspn(name, ".");
	size_t i;
	int c;

	for (i = 0; i < NHELPERS; i++) {
		if (strlen(helpers[i].func) != len || strncmp(helpers[i].func, name, len))
			continue;
		for (c = 0; c < p->ncallers; c++)
			if (p->callers[c] && !strcmp(p->callers[c], helpers[i].caller))
				return (uint16_t)c;
	}
	return CHKWIN_CALLER_UNKNOWN;
}

void chkwin_callers_default(struct chkwin_plan *p)
{
	size_t i;

	if (p->ncallers)
		return;
	for (i = 0; i < NDEFAULT; i++)
		p->callers[i] = strdup(default_callers[i]);
	p->ncallers = NDEFAULT;
}

int chkwin_callers_plan(const struct ksyms *ks, struct chkwin_plan *p)
{
	size_t i;
	int n = 0;

	for (i = 0; i < ks->count; i++) {
		const struct ksym *s = &ks->syms[i];
		uint64_t end = 0;
		uint16_t kind;
		size_t j;

		if (!is_text(s) || !is_ext4(s) || in_funcs(p, s->addr))
			continue;
		/* kallsyms has no sizes: a function ends where the next symbol starts. */
		for (j = i + 1; j < ks->count && !end; j++)
			if (ks->syms[j].addr > s->addr)
				end = ks->syms[j].addr;
		if (!end)
			continue;
		kind = kind_of(p, s->name);
		if (n && p->caller_ranges[n - 1].end == s->addr &&
		    p->caller_ranges[n - 1].kind == kind) {
			p->caller_ranges[n - 1].end = end;
			continue;
		}
		if (n && p->caller_ranges[n - 1].end > s->addr)
			continue;	/* an alias at the same address */
		if (n == CHKWIN_CALLER_RANGES) {
			snprintf(p->error, sizeof(p->error),
				 "more than %d ext4 address ranges for caller kinds",
				 CHKWIN_CALLER_RANGES);
			return -1;
		}
		p->caller_ranges[n].start = s->addr;
		p->caller_ranges[n].end = end;
		p->caller_ranges[n].kind = kind;
		n++;
	}
	p->ncaller_ranges = n;
	return 0;
}
