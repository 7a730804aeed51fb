/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where an interrupted pc lies: its class (enum chkwin_class), the
 * checksum function and offset for the histograms.  Included by
 * chkwin.bpf.c only, after windows.bpf.h.
 */
#ifndef CHKWIN_CLASSIFY_BPF_H
#define CHKWIN_CLASSIFY_BPF_H

const volatile __u64 func_start[CHKWIN_FUNCS];
const volatile __u64 func_end[CHKWIN_FUNCS];

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CHKWIN_HIST_ENTRIES);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

/* Which checksum function (if any) holds pc, and where in it. */
struct place {
	__u8 class;
	__u8 func;
	__u16 offset;
	__u16 watch;
};

static __always_inline struct place classify(__u64 pc, __u8 el)
{
	struct place p = { CHKWIN_CLASS_KERNEL, CHKWIN_FUNC_NONE, 0, CHKWIN_WATCH_NONE };
	int f;

	if (el == 0) {
		p.class = CHKWIN_CLASS_USER;
		return p;
	}
	for (f = 0; f < CHKWIN_FUNCS; f++) {
		if (func_start[f] && pc >= func_start[f] && pc < func_end[f]) {
			p.func = f;
			p.offset = pc - func_start[f];
			p.class = CHKWIN_CLASS_CHKSUM;
		}
	}
	if (nr_watched) {
		p.watch = watched_window(pc);
		if (p.watch != CHKWIN_WATCH_NONE)
			p.class = CHKWIN_CLASS_WINDOW;
	}
	return p;
}

static __always_inline void hist_add(enum chkwin_hist_source src, struct place p)
{
	__u32 slot = p.offset / 4, idx;
	__u64 *v;

	if (p.func >= CHKWIN_FUNCS || slot >= CHKWIN_HIST_SLOTS)
		return;
	idx = (src * CHKWIN_FUNCS + p.func) * CHKWIN_HIST_SLOTS + slot;
	v = bpf_map_lookup_elem(&hist, &idx);
	if (v)
		__sync_fetch_and_add(v, 1);
}

#endif /* CHKWIN_CLASSIFY_BPF_H */
