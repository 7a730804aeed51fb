// SPDX-License-Identifier: GPL-2.0
/*
 * chkwin: record where interrupts land relative to ext4 checksum work.
 * Open the BPF object, configure it from the plan that plan.c made for
 * this kernel, load, attach each chosen program, stream the ring buffer to
 * the log while printing a summary per interval, then detach, drain and
 * write the trailer.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "chkwin.skel.h"
#include "header.h"
#include "kallsyms.h"
#include "logfile.h"
#include "names.h"
#include "opts.h"
#include "plan.h"
#include "readlog.h"
#include "sampler.h"
#include "stats.h"
#include "summary.h"
#include "jsonstr.h"
#include "strbuf.h"

#define MAX_LINKS 32

/* The handler can only reach a global; the first signal asks, the second insists. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	if (stop_signal)
		_exit(128 + sig);
	stop_signal = sig;
}

struct run {
	const struct chkwin_opts *opts;
	struct chkwin_plan plan;
	struct chkwin_bpf *skel;
	struct bpf_link *links[MAX_LINKS];
	int nlinks;
	struct chkwin_sampler sampler;
	struct chkwin_log_writer *log;
	struct ring_buffer *rb;
	uint64_t seen[CHKWIN_REC_TYPES];
	/* The distinct functions ran records named, for the trailer's sym. lines. */
	uint64_t *fns;
	size_t nfns, fns_cap;
	uint64_t bad_size;
	uint64_t started;	/* CLOCK_MONOTONIC ns when recording began */
	int ncpus;
	int stats_fd;		/* --prog-stats: the kernel counts while it is open */
};

static bool verbose;

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The plan as the log header will say it (chkwin_plan_text), one
 * "chkwin: KEY VALUE" line each, then what only a reader needs told. */
static void print_plan(FILE *out, const struct chkwin_plan *p, const struct chkwin_opts *o)
{
	struct text t = { 0 };
	char *line, *next, *eq;

	chkwin_plan_text(&t, p);
	for (line = t.buf; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		fprintf(out, "chkwin: %-8s %s\n",
			strncmp(line, "mode.", 5) ? line : line + 5, eq + 1);
	}
	text_free(&t);
	if (!p->watched.n)
		fprintf(out, "chkwin: windows  none watched (--windows FILE names them)\n");
	if (o->sample_hz)
		fprintf(out, "chkwin: sampler  cpu-clock at %ld Hz per CPU\n", o->sample_hz);
	fprintf(out, "chkwin: record   %s", chkwin_record_names[o->record]);
	if (o->record == CHKWIN_RECORD_FAILURES)
		fprintf(out, " (history of %ld records per ring)", o->history);
	fprintf(out, "%s\n", o->floor ? ", floor: programs return at once" : "");
	fprintf(out, "chkwin: callers  %s", p->caller_source);
	if (!strcmp(p->caller_source, "stack"))
		fprintf(out, " (%d ext4 address ranges)", p->ncaller_ranges);
	fprintf(out, "\n");
}

/* Exactly the programs the plan chose get loaded. */
#define PROGRAM_NAME(prog, HOOK, ways) #prog,
static const char *const table_programs[] = { CHKWIN_PROGRAM_TABLE(PROGRAM_NAME) };

/*
 * Each program loads where the plan attaches its hook in one of its ways
 * (bpf/chkwin.h CHKWIN_PROGRAM_TABLE).  A program of the object the table
 * does not name, or a hook attached in a way no program serves, is an
 * error: the table and the object have come apart.
 */
static int choose_programs(struct chkwin_bpf *s, const struct chkwin_plan *p)
{
	unsigned int served = 0;
	struct bpf_program *prog;
	size_t i;
	int h;

#define CHOOSE(prog, HOOK, ways)							\
	do {										\
		bool on = chkwin_plan_on(p, HOOK_##HOOK) && (p->way[HOOK_##HOOK] & (ways)); \
											\
		bpf_program__set_autoload(s->progs.prog, on);				\
		served |= on ? 1U << HOOK_##HOOK : 0;					\
	} while (0);
	CHKWIN_PROGRAM_TABLE(CHOOSE)
#undef CHOOSE
	bpf_object__for_each_program(prog, s->obj) {
		for (i = 0; i < sizeof(table_programs) / sizeof(table_programs[0]); i++)
			if (!strcmp(bpf_program__name(prog), table_programs[i]))
				break;
		if (i == sizeof(table_programs) / sizeof(table_programs[0])) {
			fprintf(stderr, "chkwin: error: program %s has no line in CHKWIN_PROGRAM_TABLE\n",
				bpf_program__name(prog));
			return -1;
		}
	}
	for (h = 0; h < HOOKS; h++) {
		if (chkwin_plan_on(p, (enum chkwin_hook)h) && !(served & 1U << h)) {
			fprintf(stderr, "chkwin: error: hook %s is attached (%s) but no program of "
				"CHKWIN_PROGRAM_TABLE serves its way\n", chkwin_hook_names[h],
				p->mode[h]);
			return -1;
		}
	}
	return 0;
}

/* What the plan loads and attaches in this record mode, one line. */
static int print_programs(FILE *out, const struct chkwin_plan *p)
{
	struct chkwin_bpf *s = chkwin_bpf__open();
	struct bpf_program *prog;
	int n = 0;

	if (!s) {
		fprintf(stderr, "chkwin: error: cannot open the BPF object: %s\n", strerror(errno));
		return -1;
	}
	if (choose_programs(s, p)) {
		chkwin_bpf__destroy(s);
		return -1;
	}
	fprintf(out, "chkwin: programs");
	bpf_object__for_each_program(prog, s->obj) {
		if (bpf_program__autoload(prog)) {
			fprintf(out, " %s", bpf_program__name(prog));
			n++;
		}
	}
	fprintf(out, " (%d attached under -R %s)\n", n, chkwin_record_names[p->record]);
	chkwin_bpf__destroy(s);
	return 0;
}

static int configure(struct chkwin_bpf *s, const struct chkwin_plan *p,
		     const struct chkwin_opts *o, int ncpus)
{
	bool failures = o->record == CHKWIN_RECORD_FAILURES;
	/* Two rings per CPU and the shared blocks ring (flight.bpf.h). */
	__u32 rings = failures ? 2 * (__u32)ncpus + 1 : 1;
	unsigned long rb = 1UL << 20;
	int i;

	s->rodata->target_cpu = o->cpu;
	s->rodata->record_mode = o->record;
	s->rodata->floor_only = o->floor;
	s->rodata->snapshot_on_window = o->snapshot_window;
	s->rodata->history_len = failures ? (__u32)o->history + CHKWIN_HISTORY_SLACK : 0;
	s->rodata->history_reach = failures ? (__u32)o->history : 0;
	s->rodata->nr_cpus = (__u32)ncpus;
	s->rodata->wakeup_bytes = (__u64)o->wakeup_kb << 10;
	bpf_map__set_max_entries(s->maps.history_heads, rings);
	bpf_map__set_max_entries(s->maps.history, failures ?
				 rings * ((__u32)o->history + CHKWIN_HISTORY_SLACK) : 1);
	s->rodata->nr_watched = (__u32)p->watched.n;
	bpf_map__set_max_entries(s->maps.watched, p->watched.n ? (__u32)p->watched.n : 1);
	bpf_map__set_max_entries(s->maps.watch_counts, p->watched.n ? 2 * (__u32)p->watched.n : 2);
	for (i = 0; i < CHKWIN_FUNCS; i++) {
		s->rodata->func_start[i] = p->func[i].start;
		s->rodata->func_end[i] = p->func[i].end;
	}
	s->rodata->el1_irq_start = p->el1_irq_start;
	s->rodata->el1_irq_end = p->el1_irq_end;
	s->rodata->el0_irq_start = p->el0_irq_start;
	s->rodata->el0_irq_end = p->el0_irq_end;
	s->rodata->rq_issue_arg = p->rq_issue_arg;
	s->rodata->caller_nranges = p->ncaller_ranges;
	for (i = 0; i < p->ncaller_ranges; i++) {
		s->rodata->caller_start[i] = p->caller_ranges[i].start;
		s->rodata->caller_end[i] = p->caller_ranges[i].end;
		s->rodata->caller_kind[i] = p->caller_ranges[i].kind;
	}
	/* A ring buffer is a power of two pages. */
	while (rb < (unsigned long)o->ringbuf_mb << 20)
		rb <<= 1;
	bpf_map__set_max_entries(s->maps.events, (__u32)rb);
	return choose_programs(s, p);
}

/* --windows: the placed windows into the map the programs search. */
static int fill_watched(struct run *r)
{
	int fd = bpf_map__fd(r->skel->maps.watched);
	__u32 i;

	for (i = 0; i < (__u32)r->plan.watched.n; i++) {
		struct chkwin_watched w = {
			.first = r->plan.watched.w[i].first_addr,
			.last = r->plan.watched.w[i].last_addr,
		};

		if (bpf_map_update_elem(fd, &i, &w, BPF_ANY)) {
			int err = -errno;

			fprintf(stderr, "chkwin: error: cannot fill the watched windows map: %s\n",
				strerror(errno));
			return err;
		}
	}
	return 0;
}

/*
 * A program's link: by its section, except the chksum_update kprobes when
 * the plan resolved an ambiguous name to an address.
 */
static struct bpf_link *attach_one(struct run *r, struct bpf_program *prog)
{
	bool ret = prog == r->skel->progs.chksum_update_return;

	if (r->plan.chksum_update_addr && (ret || prog == r->skel->progs.chksum_update_entry)) {
		LIBBPF_OPTS(bpf_kprobe_opts, opts, .offset = r->plan.chksum_update_addr,
			    .retprobe = ret);

		return bpf_program__attach_kprobe_opts(prog, NULL, &opts);
	}
	return bpf_program__attach(prog);
}

static int attach_all(struct run *r)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, r->skel->obj) {
		struct bpf_link *link;

		if (!bpf_program__autoload(prog) || prog == r->skel->progs.sample)
			continue;
		link = attach_one(r, prog);
		if (!link) {
			int err = -errno;

			fprintf(stderr, "chkwin: error: cannot attach %s (%s): %s\n",
				bpf_program__name(prog), bpf_program__section_name(prog),
				strerror(-err));
			return err;
		}
		if (r->nlinks == MAX_LINKS) {
			bpf_link__destroy(link);
			fprintf(stderr, "chkwin: error: more than %d programs\n", MAX_LINKS);
			return -E2BIG;
		}
		r->links[r->nlinks++] = link;
		if (r->opts->verbose)
			fprintf(stderr, "chkwin: attached %s (%s)\n", bpf_program__name(prog),
				bpf_program__section_name(prog));
	}
	if (r->opts->sample_hz)
		return chkwin_sampler_start(&r->sampler, r->skel->progs.sample,
					    r->opts->sample_hz, r->opts->cpu);
	return 0;
}

static void detach_all(struct run *r)
{
	chkwin_sampler_stop(&r->sampler);
	while (r->nlinks > 0)
		bpf_link__destroy(r->links[--r->nlinks]);
}

/* A function a ran record named, kept once: distinct ones are few. */
static int note_fn(struct run *r, uint64_t fn)
{
	size_t i;

	for (i = 0; i < r->nfns; i++)
		if (r->fns[i] == fn)
			return 0;
	if (r->nfns == r->fns_cap) {
		size_t cap = r->fns_cap ? 2 * r->fns_cap : 64;
		uint64_t *more = realloc(r->fns, cap * sizeof(*more));

		if (!more) {
			fprintf(stderr, "chkwin: error: out of memory for the functions that ran\n");
			return -ENOMEM;
		}
		r->fns = more;
		r->fns_cap = cap;
	}
	r->fns[r->nfns++] = fn;
	return 0;
}

/*
 * sym.0xADDR=NAME+0xOFF trailer lines: the functions the ran records
 * named, placed in the running kernel's symbols, so that the log needs no
 * symbol file to be read.
 */
static int symbol_lines(const struct run *r, struct text *t)
{
	struct ksyms ks;
	size_t i;

	if (!r->nfns)
		return 0;
	if (ksyms_load(&ks, r->opts->kallsyms)) {
		fprintf(stderr, "chkwin: error: cannot read kernel symbols from %s for the "
			"functions that ran\n", r->opts->kallsyms);
		return -EIO;
	}
	for (i = 0; i < r->nfns; i++) {
		const struct ksym *s = ksyms_at(&ks, r->fns[i]);

		if (s)
			text_add(t, "sym.0x%llx=%s+0x%llx\n", (unsigned long long)r->fns[i],
				 s->name, (unsigned long long)(r->fns[i] - s->addr));
	}
	ksyms_free(&ks);
	return 0;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct run *r = ctx;
	const struct chkwin_rec *rec = data;

	if (size < sizeof(*rec)) {
		r->bad_size++;
		return 0;
	}
	if (rec->h.type < CHKWIN_REC_TYPES)
		r->seen[rec->h.type]++;
	if (rec->h.type == CHKWIN_REC_RAN && rec->ran.fn && note_fn(r, rec->ran.fn))
		return -ENOMEM;
	return r->log ? chkwin_log_add(r->log, rec) : 0;
}

static int write_header(struct run *r, uint64_t started)
{
	struct text t = { 0 };
	int err;

	chkwin_header_text(&t, r->opts, &r->plan, r->ncpus, started);
	if (t.failed) {
		fprintf(stderr, "chkwin: error: out of memory for the log header\n");
		text_free(&t);
		return -ENOMEM;
	}
	err = chkwin_log_header(r->log, t.buf);
	text_free(&t);
	return err;
}

/* --prog-stats: each loaded program's runs and run time so far. */
static void json_prog_stats(const struct run *r)
{
	struct bpf_program *prog;
	bool first = true;

	fputs(", \"programs\": {", stderr);
	bpf_object__for_each_program(prog, r->skel->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		if (!bpf_program__autoload(prog) ||
		    bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		fprintf(stderr, "%s\"%s\": {\"runs\": %llu, \"ns\": %llu}", first ? "" : ", ",
			bpf_program__name(prog), (unsigned long long)info.run_cnt,
			(unsigned long long)info.run_time_ns);
		first = false;
	}
	fputs("}", stderr);
}

/* A JSON count: null where nothing of this run fed the counter. */
static void json_count(const struct run *r, const char *key, int counter,
		       unsigned long long value)
{
	if (chkwin_plan_counts(&r->plan, counter))
		fprintf(stderr, ", \"%s\": %llu", key, value);
	else
		fprintf(stderr, ", \"%s\": null", key);
}

/*
 * The closing lines: one for people, then one JSON record for scripts
 * (scenarios forward it to the host, which parses it).
 */
static void closing_lines(const struct run *r, const struct chkwin_counts *counts,
			  const uint64_t *watch, const char *ending)
{
	unsigned long long calls = counts->v[CHKWIN_CNT_CHKSUM];
	unsigned long long hits = counts->v[CHKWIN_CNT_CHKSUM_WINDOW];
	unsigned long long lost = chkwin_counts_lost(counts);
	unsigned long long records = 0, irqs = 0, ticks = 0;
	double seconds = (double)(now_ns() - r->started) / 1e9;
	bool first;
	int i;

	for (i = 0; i < CHKWIN_REC_TYPES; i++)
		records += r->seen[i];
	for (i = 0; i < CHKWIN_CLASSES; i++) {
		irqs += counts->v[CHKWIN_CNT_IRQ_CLASS + i];
		ticks += counts->v[CHKWIN_CNT_SAMPLE_CLASS + i];
	}
	fprintf(stderr, "chkwin: %s: %llu checksum calls, %llu window hits, %llu lost records, %llu records in %.1f s%s%s\n",
		ending, calls, hits, lost, records, seconds,
		r->log ? ", log " : "", r->log ? r->log->path : "");
	fprintf(stderr, "chkwin: result {\"ending\": \"%s\"", ending);
	json_count(r, "checksum_calls", CHKWIN_CNT_CHKSUM, calls);
	json_count(r, "window_hits", CHKWIN_CNT_CHKSUM_WINDOW, hits);
	json_count(r, "irq_arrivals", CHKWIN_CNT_IRQ_CLASS, irqs);
	json_count(r, "sampler_ticks", CHKWIN_CNT_SAMPLE_CLASS, ticks);
	fprintf(stderr, ", \"lost\": %llu, \"records\": %llu", lost, records);
	json_count(r, "snapshots", CHKWIN_CNT_SNAPSHOT, counts->v[CHKWIN_CNT_SNAPSHOT]);
	json_count(r, "evicted", CHKWIN_CNT_EVICTED, counts->v[CHKWIN_CNT_EVICTED]);
	if (r->plan.watched.n) {
		/* Arrivals (interrupts and ticks) per watched window, those with any. */
		fputs(", \"watched_arrivals\": {", stderr);
		for (first = true, i = 0; i < r->plan.watched.n; i++) {
			uint64_t n = watch[i] + watch[r->plan.watched.n + i];

			if (!n)
				continue;
			fprintf(stderr, "%s", first ? "" : ", ");
			json_str(stderr, r->plan.watched.w[i].name, sizeof(r->plan.watched.w[i].name));
			fprintf(stderr, ": %llu", (unsigned long long)n);
			first = false;
		}
		fputs("}", stderr);
	}
	if (r->stats_fd >= 0)
		json_prog_stats(r);
	fprintf(stderr, ", \"seconds\": %.3f, \"log\": ", seconds);
	if (r->log)
		json_str(stderr, r->log->path, strlen(r->log->path));
	else
		fputs("null", stderr);
	fputs("}\n", stderr);
}

static int finish(struct run *r, struct chkwin_summary *sum, const char *ending)
{
	struct chkwin_counts counts;
	struct chkwin_hist *hist = calloc(1, sizeof(*hist));
	uint64_t *watch = calloc(2 * (size_t)r->plan.watched.n + 1, sizeof(*watch));
	struct text t = { 0 };
	int err;

	if (!hist || !watch) {
		fprintf(stderr, "chkwin: error: out of memory for the histogram\n");
		free(hist);
		free(watch);
		return -ENOMEM;
	}
	err = chkwin_counts_read(bpf_map__fd(r->skel->maps.cpu_state), r->ncpus, &counts);
	if (!err)
		err = chkwin_hist_read(bpf_map__fd(r->skel->maps.hist), r->ncpus, hist);
	if (!err && r->plan.watched.n)
		err = chkwin_watch_counts_read(bpf_map__fd(r->skel->maps.watch_counts), r->ncpus,
					       watch, 2 * (uint32_t)r->plan.watched.n);
	if (!err && !r->opts->quiet)
		chkwin_summary_hist(sum, &r->plan, hist);
	if (!err && r->log) {
		chkwin_trailer_text(&t, &r->plan, r->seen, &counts, watch, hist, now_ns(), ending);
		err = symbol_lines(r, &t);
		if (!err)
			err = t.failed ? -ENOMEM : chkwin_log_trailer(r->log, t.buf);
		text_free(&t);
	}
	if (!err)
		closing_lines(r, &counts, watch, ending);
	free(hist);
	free(watch);
	return err;
}

static int record(struct run *r)
{
	const struct chkwin_opts *o = r->opts;
	uint64_t started = now_ns(), last = started, deadline = UINT64_MAX;
	uint64_t interval = (uint64_t)(o->interval * 1e9);
	const char *ending = "signal";
	struct chkwin_summary sum;
	struct chkwin_counts counts;
	long lines = 0;
	int err = 0;

	r->started = started;
	if (o->duration > 0)
		deadline = started + (uint64_t)(o->duration * 1e9);
	if (r->log && (err = write_header(r, started)))
		return err;
	chkwin_summary_init(&sum, stdout, o->format, &r->plan);
	/* Scripts wait for this line before starting a workload. */
	fprintf(stderr, "chkwin: recording%s%s\n", r->log ? " to " : "",
		r->log ? r->log->path : "");
	while (!stop_signal) {
		uint64_t now = now_ns();

		if (r->rb) {
			/* Without a wake-up for every record, a timeout can leave data. */
			err = ring_buffer__poll(r->rb, 100);
			if (err >= 0 || err == -EINTR)
				err = ring_buffer__consume(r->rb);
			if (err < 0 && err != -EINTR) {
				fprintf(stderr, "chkwin: error: reading the ring buffer: %s\n",
					strerror(-err));
				break;
			}
			err = 0;
		} else {
			usleep(100000);
		}
		now = now_ns();
		if (now - last >= interval || now >= deadline) {
			if (r->log && (err = chkwin_log_flush(r->log)))
				break;
			err = chkwin_counts_read(bpf_map__fd(r->skel->maps.cpu_state), r->ncpus,
						 &counts);
			if (err)
				break;
			if (!o->quiet)
				chkwin_summary_line(&sum, &counts, (double)(now - last) / 1e9);
			last = now;
			lines++;
		}
		if (now >= deadline) {
			ending = "duration";
			break;
		}
		if (o->count && lines >= o->count) {
			ending = "count";
			break;
		}
	}
	/* Stop producing, then drain what is already in the ring buffer. */
	detach_all(r);
	if (r->rb && ring_buffer__consume(r->rb) < 0 && !err)
		fprintf(stderr, "chkwin: warning: draining the ring buffer failed\n");
	if (r->bad_size)
		fprintf(stderr, "chkwin: warning: %llu ring-buffer records had a wrong size\n",
			(unsigned long long)r->bad_size);
	if (err)
		return err;
	return finish(r, &sum, ending);
}

static int run(const struct chkwin_opts *o)
{
	struct chkwin_log_writer *log = NULL;
	struct run r = { .opts = o, .stats_fd = -1 };
	int err = 0;

	if (chkwin_plan_make(o, &r.plan)) {
		fprintf(stderr, "chkwin: error: %s\n", r.plan.error);
		chkwin_plan_free(&r.plan);
		return 1;
	}
	if (o->dry_run || o->verbose) {
		print_plan(o->dry_run ? stdout : stderr, &r.plan, o);
		err = print_programs(o->dry_run ? stdout : stderr, &r.plan);
	}
	if (o->dry_run || err) {
		chkwin_plan_free(&r.plan);
		return err ? 1 : 0;
	}
	r.ncpus = libbpf_num_possible_cpus();
	if (r.ncpus <= 0) {
		fprintf(stderr, "chkwin: error: cannot count possible CPUs\n");
		chkwin_plan_free(&r.plan);
		return 1;
	}
	if (o->output) {
		log = malloc(sizeof(*log));
		if (!log || chkwin_log_create(log, o->output)) {
			if (!log)
				fprintf(stderr, "chkwin: error: out of memory for the log\n");
			free(log);
			chkwin_plan_free(&r.plan);
			return 1;
		}
		r.log = log;
	}

	r.skel = chkwin_bpf__open();
	if (!r.skel) {
		err = -errno;
		fprintf(stderr, "chkwin: error: cannot open the BPF object: %s\n", strerror(-err));
		goto out;
	}
	err = configure(r.skel, &r.plan, o, r.ncpus);
	if (err)
		goto out;
	err = chkwin_bpf__load(r.skel);
	if (err) {
		fprintf(stderr, "chkwin: error: cannot load the BPF programs: %s (-v shows the verifier log)\n",
			strerror(-err));
		goto out;
	}
	if (o->record != CHKWIN_RECORD_COUNTS) {
		r.rb = ring_buffer__new(bpf_map__fd(r.skel->maps.events), on_record, &r, NULL);
		if (!r.rb) {
			err = -errno;
			fprintf(stderr, "chkwin: error: cannot open the ring buffer: %s\n",
				strerror(-err));
			goto out;
		}
	}
	err = fill_watched(&r);
	if (err)
		goto out;
	/* The kernel times programs only while this fd is open (5.8). */
	if (o->prog_stats && (r.stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME)) < 0) {
		err = -errno;
		fprintf(stderr, "chkwin: error: --prog-stats: the kernel will not count "
			"program run time: %s\n", strerror(errno));
		goto out;
	}
	err = attach_all(&r);
	if (err)
		goto out;
	err = record(&r);
out:
	detach_all(&r);
	if (r.stats_fd >= 0)
		close(r.stats_fd);
	ring_buffer__free(r.rb);
	free(r.fns);
	chkwin_bpf__destroy(r.skel);
	if (r.log && chkwin_log_close(r.log) && !err)
		err = -EIO;
	free(log);
	chkwin_plan_free(&r.plan);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct chkwin_opts opts;
	struct sigaction sa = { .sa_handler = on_signal };

	chkwin_parse_args(argc, argv, &opts);
	if (opts.read_path)
		return chkwin_read_log(opts.read_path, opts.format);
	verbose = opts.verbose;
	libbpf_set_print(print_libbpf);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return run(&opts);
}
