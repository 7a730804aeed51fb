// SPDX-License-Identifier: GPL-2.0
/* What a log must say about the kernel and the run to be read offline. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "header.h"
#include "names.h"
#include "schema.h"

const char *chkwin_flavour(const char *release)
{
	const char *tag = strstr(release, "-chkwin-");

	return tag ? tag + strlen("-chkwin-") : "stock";
}

/* First line of a file, or fallback. */
static void first_line(const char *path, char *buf, size_t len, const char *fallback)
{
	FILE *f = fopen(path, "r");

	snprintf(buf, len, "%s", fallback);
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	else
		snprintf(buf, len, "%s", fallback);
	fclose(f);
}

/* irq.N=NAME for each numbered line of /proc/interrupts (last column). */
static void irq_names(struct text *t)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[1024];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *end, *name;
		long irq = strtol(line, &end, 10);
		size_t n;

		if (end == line || *end != ':')
			continue;
		n = strcspn(line, "\n");
		line[n] = '\0';
		while (n > 0 && isspace((unsigned char)line[n - 1]))
			line[--n] = '\0';
		name = strrchr(line, ' ');
		name = name ? name + 1 : end + 1;
		text_add(t, "irq.%ld=%s\n", irq, name);
	}
	fclose(f);
}

void chkwin_plan_text(struct text *t, const struct chkwin_plan *p)
{
	char key[32];
	int i;

	for (i = 0; i < HOOKS; i++) {
		snprintf(key, sizeof(key), "mode.%s", chkwin_hook_names[i]);
		text_kv(t, key, p->mode[i] ? p->mode[i] : "absent");
	}
	for (i = 0; i < CHKWIN_FUNCS; i++)
		if (p->func[i].name)
			text_add(t, "func.%d=%s 0x%llx 0x%llx\n", i, p->func[i].name,
				 (unsigned long long)p->func[i].start,
				 (unsigned long long)p->func[i].end);
	for (i = 0; i < p->watched.n; i++)
		text_add(t, "watch.%d=%s 0x%llx 0x%llx\n", i, p->watched.w[i].name,
			 (unsigned long long)p->watched.w[i].first_addr,
			 (unsigned long long)p->watched.w[i].last_addr);
}

void chkwin_header_text(struct text *t, const struct chkwin_opts *o,
			const struct chkwin_plan *p, int ncpus, uint64_t started_ns)
{
	struct utsname u;
	char buf[4096];
	int i;

	if (uname(&u))
		memset(&u, 0, sizeof(u));
	text_kv(t, "tool", "chkwin 0.1");
	text_kv(t, "kernel_release", u.release);
	text_kv(t, "kernel_version", u.version);
	first_line("/proc/cmdline", buf, sizeof(buf), "");
	text_kv(t, "kernel_cmdline", buf);
	text_kv(t, "flavour", chkwin_flavour(u.release));
	text_kv(t, "kernel_kind", p->kernel_kind);
	first_line("/sys/module/ext4/parameters/chksum_window", buf, sizeof(buf), "absent");
	text_kv(t, "chksum_window", buf);
	first_line("/sys/module/ext4/parameters/chksum_window_width", buf, sizeof(buf), "absent");
	text_kv(t, "chksum_window_width", buf);
	text_add(t, "cpus=%d\n", ncpus);
	text_kv(t, "clock", "CLOCK_MONOTONIC");
	first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		   buf, sizeof(buf), "unknown");
	text_kv(t, "clocksource", buf);
	text_add(t, "started_ns=%llu\n", (unsigned long long)started_ns);
	text_add(t, "target_cpu=%d\n", o->cpu);
	text_add(t, "sample_hz=%ld\n", o->sample_hz);
	text_kv(t, "record", chkwin_record_names[o->record]);
	text_add(t, "history=%ld\n", o->record == CHKWIN_RECORD_FAILURES ? o->history : 0);
	if (o->record == CHKWIN_RECORD_FAILURES)
		text_add(t, "snapshot_on=%s\n", o->snapshot_window ? "failure,window" : "failure");
	text_add(t, "wakeup_bytes=%ld\n", o->wakeup_kb << 10);
	if (o->floor)
		text_kv(t, "floor", "on");
	chkwin_plan_text(t, p);
	text_kv(t, "caller_source", p->caller_source);
	for (i = 0; i < p->ncallers; i++)
		if (p->callers[i])
			text_add(t, "caller.%d=%s\n", i, p->callers[i]);
	irq_names(t);
	chkwin_schema_text(t);
}

static const char *const hist_sources[CHKWIN_HIST_SOURCES] = { "irq", "sample" };

static void hist_line(struct text *t, const struct chkwin_hist *h, int src, int func)
{
	const char *sep = "=";
	int slot;

	for (slot = 0; slot < CHKWIN_HIST_SLOTS; slot++) {
		uint64_t n = chkwin_hist_at(h, src, func, slot);

		if (!n)
			continue;
		if (*sep == '=')
			text_add(t, "hist.%s.%d", hist_sources[src], func);
		text_add(t, "%s%d:%llu", sep, slot, (unsigned long long)n);
		sep = " ";
	}
	if (*sep == ' ')
		text_add(t, "\n");
}

/* A counter's value, or "not-attached" where nothing of this run feeds it. */
static void counter_line(struct text *t, const struct chkwin_plan *p,
			 const struct chkwin_counts *c, const char *prefix, int i)
{
	char name[64];

	if (chkwin_plan_counts(p, i))
		text_add(t, "%s%s=%llu\n", prefix, chkwin_counter_name(i, name, sizeof(name)),
			 (unsigned long long)c->v[i]);
	else
		text_add(t, "%s%s=" CHKWIN_NOT_ATTACHED "\n", prefix,
			 chkwin_counter_name(i, name, sizeof(name)));
}

/* count.watch.SOURCE.NAME: a watched window's arrivals from one source. */
static void watch_lines(struct text *t, const struct chkwin_plan *p, const uint64_t *watch,
			int source)
{
	const char *names[2] = { "irq", "sample" };
	bool on = chkwin_plan_counts(p, source ? CHKWIN_CNT_SAMPLE_CLASS : CHKWIN_CNT_IRQ_CLASS);
	int i;

	for (i = 0; i < p->watched.n; i++)
		if (on)
			text_add(t, "count.watch.%s.%s=%llu\n", names[source], p->watched.w[i].name,
				 (unsigned long long)watch[source * p->watched.n + i]);
		else
			text_add(t, "count.watch.%s.%s=" CHKWIN_NOT_ATTACHED "\n", names[source],
				 p->watched.w[i].name);
}

void chkwin_trailer_text(struct text *t, const struct chkwin_plan *p,
			 const uint64_t written[CHKWIN_REC_TYPES],
			 const struct chkwin_counts *c, const uint64_t *watch,
			 const struct chkwin_hist *h, uint64_t ended_ns, const char *ending)
{
	int i, src, func;

	text_add(t, "ended_ns=%llu\n", (unsigned long long)ended_ns);
	text_kv(t, "ending", ending);
	for (i = 1; i < CHKWIN_REC_TYPES; i++)
		text_add(t, "records.%s=%llu\n", chkwin_rec_name(i),
			 (unsigned long long)written[i]);
	for (i = CHKWIN_CNT_LOST; i < CHKWIN_COUNTERS; i++)
		counter_line(t, p, c, "", i);
	for (i = 0; i < CHKWIN_CNT_LOST; i++)
		counter_line(t, p, c, "count.", i);
	watch_lines(t, p, watch, 0);
	watch_lines(t, p, watch, 1);
	for (src = 0; src < CHKWIN_HIST_SOURCES; src++)
		for (func = 0; func < CHKWIN_FUNCS; func++)
			hist_line(t, h, src, func);
}
