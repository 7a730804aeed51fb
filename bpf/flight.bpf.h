/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The flight recorder (--record failures): per-CPU history rings that a
 * checksum failure snapshots, and rec_write(), which puts a record where
 * the record mode sends it.  Included by chkwin.bpf.c only, after
 * record.bpf.h.
 */
#ifndef CHKWIN_FLIGHT_BPF_H
#define CHKWIN_FLIGHT_BPF_H

const volatile bool snapshot_on_window;	/* failures mode: window arrivals snapshot too */
const volatile __u32 history_len;	/* slots per history ring: K + SLACK */
const volatile __u32 history_reach;	/* K: the records a snapshot reaches back */
const volatile __u32 nr_cpus;		/* history rings: 2 per CPU, then blocks */

/*
 * The flight recorder's rings, ring after ring, history_len slots each: CPU c's
 * calls ring is 2c, its arrivals ring 2c + 1, the shared blocks ring
 * 2 * nr_cpus.  Plain arrays: a snapshot reads the shared ring on any CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* sized by the loader */
	__type(key, __u32);
	__type(value, struct chkwin_rec);
} history SEC(".maps");

struct ring_head {
	__u64 head;		/* records ever pushed; the next goes to head % slots */
	__u64 emitted;		/* records before this one were sent or evicted */
	__u64 frozen;		/* snapshots sending this ring right now */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* sized by the loader */
	__type(key, __u32);
	__type(value, struct ring_head);
} history_heads SEC(".maps");

#define RING_OF_TYPE(TYPE, name, ring) [CHKWIN_REC_##TYPE] = CHKWIN_RING_##ring,
/* The history ring each record type goes to (bpf/chkwin.h CHKWIN_RECORDS). */
static const __u8 ring_of_type[CHKWIN_REC_TYPES] = { CHKWIN_RECORDS(RING_OF_TYPE) };

/* A history ring of CPU cpu (this CPU's, or an IPI's receiver's: ipi_raise). */
static __always_inline __u32 ring_of(__u8 ring, __u32 cpu)
{
	if (ring == CHKWIN_RING_BLOCKS)
		return 2 * nr_cpus;
	return 2 * cpu + ring;
}

/*
 * The next slot of a history ring; it is claimed first, so a nested
 * program on this CPU takes the one after.  While a snapshot sends the
 * ring, pushes are dropped (and counted): they come after the failure,
 * and would overwrite what the snapshot is sending.
 */
static __always_inline struct chkwin_rec *history_slot(__u8 ring, __u32 cpu)
{
	__u32 id = ring_of(ring, cpu), key;
	struct ring_head *h = bpf_map_lookup_elem(&history_heads, &id);
	__u64 n;

	if (!h || !history_len)
		return NULL;
	if (*(volatile __u64 *)&h->frozen) {
		count(CHKWIN_CNT_FROZEN);
		return NULL;
	}
	n = __sync_fetch_and_add(&h->head, 1);
	key = id * history_len + n % history_len;
	return bpf_map_lookup_elem(&history, &key);
}

/*
 * A record is written where it goes, never built on the stack first:
 * reserved in the ring (-R all), in the next slot of its type's history
 * ring (-R failures; ring_of_type), or nowhere (-R counts): then nothing
 * is built, and the cpu and tid expressions are not evaluated.  fill(r, ...) writes the payload in
 * place.  A full ring counts as the probe's loss.  A macro, not a
 * function, so that the verifier sees each reservation checked once and
 * submitted on the same path.  rec_write_by() takes the writer's cpu and
 * tid from a caller that has them already (a helper call each saved on
 * the checksum path); rec_write() asks the kernel.
 */
#define rec_write_by(type, ts, cpu, tid, probe, fill, ...)			\
	do {									\
		struct chkwin_rec *r_;						\
		__u32 cpu_;							\
										\
		if (record_mode == CHKWIN_RECORD_ALL) {				\
			cpu_ = (cpu);						\
			r_ = bpf_ringbuf_reserve(&events, sizeof(*r_), 0);	\
			if (!r_) {						\
				count(CHKWIN_CNT_LOST + (probe));		\
			} else {						\
				rec_head(r_, type, ts, cpu_, (tid));		\
				fill(r_, __VA_ARGS__);				\
				bpf_ringbuf_submit(r_, wakeup_flag(0));		\
			}							\
		} else if (record_mode == CHKWIN_RECORD_FAILURES) {		\
			cpu_ = (cpu);						\
			r_ = history_slot(ring_of_type[type], cpu_);		\
			if (r_) {						\
				rec_head(r_, type, ts, cpu_, (tid));		\
				fill(r_, __VA_ARGS__);				\
			}							\
		}								\
	} while (0)

#define rec_write(type, ts, probe, fill, ...)					\
	rec_write_by(type, ts, bpf_get_smp_processor_id(),			\
		     (__u32)bpf_get_current_pid_tgid(), probe, fill, __VA_ARGS__)

struct drain {
	__u32 ring;
	__u64 from;
};

static long send_kept(__u32 i, struct drain *d)
{
	__u32 key = d->ring * history_len + (d->from + i) % history_len;
	struct chkwin_rec *r = bpf_map_lookup_elem(&history, &key);

	if (r)
		send(r, CHKWIN_PROBE_SNAPSHOT);
	return 0;
}

/*
 * What a ring holds that no snapshot has sent, of its last K records: the
 * range [from, head), the records overwritten unsent (added to *evicted)
 * and its horizon, the oldest of the K, SLACK slots from the next push.
 */
static __always_inline __u32 unsent(__u32 ring, struct drain *d, __u64 *evicted,
				    __u64 *horizon)
{
	struct ring_head *h = bpf_map_lookup_elem(&history_heads, &ring);
	__u64 head, oldest, from;
	struct chkwin_rec *r;
	__u32 key;

	if (!h || !history_len)
		return 0;
	head = h->head;
	oldest = head > history_reach ? head - history_reach : 0;
	from = h->emitted > oldest ? h->emitted : oldest;
	*evicted += from - h->emitted;
	h->emitted = head;
	if (horizon && oldest) {
		key = ring * history_len + oldest % history_len;
		r = bpf_map_lookup_elem(&history, &key);
		*horizon = r ? r->h.ts : 0;
	}
	d->ring = ring;
	d->from = from;
	return head - from;
}

/* Pushes into a drained ring since it was read, beyond the slack. */
static __always_inline __u64 overrun(const struct drain *d, __u32 sent)
{
	struct ring_head *h = bpf_map_lookup_elem(&history_heads, &d->ring);
	__u64 pushed;

	if (!h || !sent)
		return 0;
	pushed = h->head - (d->from + sent);
	return pushed > CHKWIN_HISTORY_SLACK ? pushed - CHKWIN_HISTORY_SLACK : 0;
}

/* Freeze (delta 1) or thaw (delta -1) a ring for a snapshot. */
static __always_inline void freeze(__u32 ring, __u64 delta)
{
	struct ring_head *h = bpf_map_lookup_elem(&history_heads, &ring);

	if (h)
		__sync_fetch_and_add(&h->frozen, delta);
}

/*
 * A failure on this CPU: send what its rings and the blocks ring hold.  The
 * snapshot record has the failing record's ts, so readers can pair them.
 * The three rings stay frozen while they are sent, so interrupts meanwhile
 * cannot replace a horizon or a record still to send.
 */
static __always_inline void snapshot(__u8 trigger, __u64 ts)
{
	struct drain calls = {}, arrivals = {}, blocks = {};
	__u32 cpu = bpf_get_smp_processor_id();
	struct chkwin_rec s;
	__u64 evicted = 0, shared = 0;

	if (record_mode != CHKWIN_RECORD_FAILURES)
		return;
	freeze(ring_of(CHKWIN_RING_CALLS, cpu), 1);
	freeze(ring_of(CHKWIN_RING_ARRIVALS, cpu), 1);
	freeze(ring_of(CHKWIN_RING_BLOCKS, cpu), 1);
	count(CHKWIN_CNT_SNAPSHOT);
	rec_head(&s, CHKWIN_REC_SNAPSHOT, ts, cpu, (__u32)bpf_get_current_pid_tgid());
	s.snapshot.trigger = trigger;
	s.snapshot.history = history_reach;
	s.snapshot.calls = unsent(ring_of(CHKWIN_RING_CALLS, cpu), &calls, &evicted,
				  &s.snapshot.call_horizon);
	s.snapshot.arrivals = unsent(ring_of(CHKWIN_RING_ARRIVALS, cpu), &arrivals, &evicted,
				     &s.snapshot.arrival_horizon);
	s.snapshot.blocks = unsent(ring_of(CHKWIN_RING_BLOCKS, cpu), &blocks, &shared, NULL);
	s.snapshot.evicted = evicted;
	count_n(CHKWIN_CNT_EVICTED, evicted + shared);
	send(&s, CHKWIN_PROBE_SNAPSHOT);
	bpf_loop(s.snapshot.calls, send_kept, &calls, 0);
	bpf_loop(s.snapshot.arrivals, send_kept, &arrivals, 0);
	bpf_loop(s.snapshot.blocks, send_kept, &blocks, 0);
	/*
	 * Pushes that claimed a slot before the freeze and beyond the slack
	 * (another CPU's, into the blocks ring): some sent records were wrong.
	 */
	count_n(CHKWIN_CNT_LOST + CHKWIN_PROBE_SNAPSHOT,
		overrun(&arrivals, s.snapshot.arrivals) + overrun(&blocks, s.snapshot.blocks));
	freeze(ring_of(CHKWIN_RING_CALLS, cpu), -1);
	freeze(ring_of(CHKWIN_RING_ARRIVALS, cpu), -1);
	freeze(ring_of(CHKWIN_RING_BLOCKS, cpu), -1);
}

#endif /* CHKWIN_FLIGHT_BPF_H */
