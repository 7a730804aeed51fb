/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The windows watched by name (--windows, docs/windows.md): which one
 * holds a pc, and arrivals counted per window.  Included by chkwin.bpf.c
 * only, after record.bpf.h.
 */
#ifndef CHKWIN_WINDOWS_BPF_H
#define CHKWIN_WINDOWS_BPF_H

const volatile __u32 nr_watched;		/* --windows: entries of watched */

/* --windows: sorted and disjoint (the loader checks), searched by halving. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* sized by the loader */
	__type(key, __u32);
	__type(value, struct chkwin_watched);
} watched SEC(".maps");

/* Arrivals per watched window: interrupts, then sampler ticks. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);		/* sized by the loader: 2 * nr_watched */
	__type(key, __u32);
	__type(value, __u64);
} watch_counts SEC(".maps");

/* The watched window holding pc, or CHKWIN_WATCH_NONE. */
static __always_inline __u16 watched_window(__u64 pc)
{
	__u32 lo = 0, hi = nr_watched, mid;
	struct chkwin_watched *w;
	int i;

	for (i = 0; i < CHKWIN_WATCH_STEPS && lo < hi; i++) {
		mid = lo + (hi - lo) / 2;
		w = bpf_map_lookup_elem(&watched, &mid);
		if (!w)
			break;
		if (pc < w->first)
			hi = mid;
		else if (pc > w->last)
			lo = mid + 1;
		else
			return mid;
	}
	return CHKWIN_WATCH_NONE;
}

static __always_inline void count_watched(__u32 source, __u16 watch)
{
	__u32 idx = source * nr_watched + watch;
	__u64 *v;

	if (watch == CHKWIN_WATCH_NONE)
		return;
	v = bpf_map_lookup_elem(&watch_counts, &idx);
	if (v)
		*v += 1;
}

#endif /* CHKWIN_WINDOWS_BPF_H */
