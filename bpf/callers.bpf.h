/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fallback mode's caller search: which ext4 function asked for a checksum,
 * from the return address and a few frames of the stack.  Included by
 * chkwin.bpf.c only, after chkwin.h.
 */
#ifndef CHKWIN_CALLERS_BPF_H
#define CHKWIN_CALLERS_BPF_H

#define CALLER_FRAMES	8	/* chksum_update's caller is within a few frames */
#define CALLER_STEPS	11	/* binary search steps: log2(CHKWIN_CALLER_RANGES) + 1 */

/* Fallback caller kinds: ext4 functions, sorted, disjoint (loader/callers.c). */
const volatile __u32 caller_nranges;
const volatile __u64 caller_start[CHKWIN_CALLER_RANGES];
const volatile __u64 caller_end[CHKWIN_CALLER_RANGES];
const volatile __u16 caller_kind[CHKWIN_CALLER_RANGES];

/* The caller range holding addr: its kind, or -1 outside ext4. */
static __always_inline int caller_range(__u64 addr)
{
	__u32 lo = 0, hi = caller_nranges, mid;
	int i;

	for (i = 0; i < CALLER_STEPS && lo < hi; i++) {
		mid = (lo + hi) / 2;
		if (mid >= CHKWIN_CALLER_RANGES)
			return -1;
		if (addr < caller_start[mid])
			hi = mid;
		else if (addr >= caller_end[mid])
			lo = mid + 1;
		else
			return caller_kind[mid];
	}
	return -1;
}

/*
 * The kind of the innermost ext4 function on the stack.  At the kprobe the
 * caller's return address is still in the link register, and the frame
 * walk starts one frame up: look at lr first, then the walk.
 */
static __always_inline __u16 stack_caller(struct pt_regs *ctx)
{
	__u64 ips[CALLER_FRAMES];
	long n;
	int i, kind;

	if (!caller_nranges)
		return CHKWIN_CALLER_UNKNOWN;
	kind = caller_range(PT_REGS_RET(ctx));
	if (kind >= 0)
		return kind;
	n = bpf_get_stack(ctx, ips, sizeof(ips), 0);
	if (n <= 0)
		return CHKWIN_CALLER_UNKNOWN;
	n /= sizeof(__u64);
	/* ips[0] is chksum_update itself. */
	for (i = 1; i < CALLER_FRAMES && i < n; i++) {
		kind = caller_range(ips[i]);
		if (kind >= 0)
			return kind;
	}
	return CHKWIN_CALLER_UNKNOWN;
}

#endif /* CHKWIN_CALLERS_BPF_H */
