/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The counters and the ring buffer every record reaches user space
 * through; included by chkwin.bpf.c only, after vmlinux.h and chkwin.h.
 */
#ifndef CHKWIN_RECORD_BPF_H
#define CHKWIN_RECORD_BPF_H

/* Settings, filled in by the loader between open and load. */
const volatile int target_cpu = -1;
const volatile __u8 record_mode = CHKWIN_RECORD_ALL;
const volatile bool floor_only;		/* bench: attach, then return at once */
const volatile __u64 wakeup_bytes;	/* 0: the kernel wakes user space per record */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct chkwin_cpu_state);
} cpu_state SEC(".maps");

static const __u32 zero;

static __always_inline struct chkwin_cpu_state *this_cpu_state(void)
{
	return bpf_map_lookup_elem(&cpu_state, &zero);
}

/* Every program asks first: the floor records nothing, -c one CPU only. */
static __always_inline bool wanted(void)
{
	return !floor_only &&
	       (target_cpu < 0 || bpf_get_smp_processor_id() == (__u32)target_cpu);
}

/* Counting where the CPU's element is at hand already. */
static __always_inline void count_n_in(struct chkwin_cpu_state *s, __u32 idx, __u64 n)
{
	if (s && idx < CHKWIN_COUNTERS)
		__sync_fetch_and_add(&s->counters[idx], n);
}

static __always_inline void count_in(struct chkwin_cpu_state *s, __u32 idx)
{
	count_n_in(s, idx, 1);
}

static __always_inline void count_n(__u32 idx, __u64 n)
{
	count_n_in(this_cpu_state(), idx, n);
}

static __always_inline void count(__u32 idx)
{
	count_n(idx, 1);
}

/*
 * Waking user space per record costs an irq_work interrupt each; with a
 * threshold, it is woken once, by the record that takes the waiting data
 * past it (it also polls).  Waking on every record above the threshold
 * feeds itself: each wake-up is an interrupt the irq probes record, whose
 * record wakes again, as long as the reader is behind.  pending: bytes of
 * this record the ring does not count yet (a reserved one it does).
 */
#define REC_ROOM	(BPF_RINGBUF_HDR_SZ + sizeof(struct chkwin_rec))
static __always_inline __u64 wakeup_flag(__u64 pending)
{
	__u64 avail;

	if (!wakeup_bytes)
		return 0;
	avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) + pending;
	return avail >= wakeup_bytes && avail - REC_ROOM < wakeup_bytes ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* A copy into the ring: snapshots send what the history rings hold. */
static __always_inline void send(const struct chkwin_rec *r, enum chkwin_probe probe)
{
	if (bpf_ringbuf_output(&events, (void *)r, sizeof(*r), wakeup_flag(REC_ROOM)))
		count(CHKWIN_CNT_LOST + probe);
}

static __always_inline void rec_head(struct chkwin_rec *r, __u8 type, __u64 ts, __u32 cpu,
				     __u32 tid)
{
	__builtin_memset(r, 0, sizeof(*r));
	r->h.type = type;
	r->h.cpu = cpu;
	r->h.tid = tid;
	r->h.ts = ts;
}

#endif /* CHKWIN_RECORD_BPF_H */
