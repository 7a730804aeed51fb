// SPDX-License-Identifier: GPL-2.0
/* What chkwin prints while it runs: rates per interval, then where arrivals landed. */
#include <string.h>
#include <time.h>

#include "names.h"
#include "summary.h"

#define BAR_WIDTH 40

void chkwin_summary_init(struct chkwin_summary *s, FILE *out, enum chkwin_format format,
			 const struct chkwin_plan *plan)
{
	memset(s, 0, sizeof(*s));
	s->out = out;
	s->format = format;
	s->verify_on = chkwin_plan_on(plan, HOOK_VERIFY);
}

static uint64_t delta(const struct chkwin_summary *s, const struct chkwin_counts *now, int i)
{
	return now->v[i] - s->last.v[i];
}

void chkwin_summary_line(struct chkwin_summary *s, const struct chkwin_counts *now,
			 double elapsed)
{
	int fail_idx = s->verify_on ? CHKWIN_CNT_VERIFY_BAD : CHKWIN_CNT_IGET_BADCRC;
	uint64_t lost = chkwin_counts_lost(now) - chkwin_counts_lost(&s->last);
	char when[16];
	time_t t = time(NULL);
	int c;

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
	if (elapsed <= 0)
		elapsed = 1e-9;
	switch (s->format) {
	case FORMAT_TEXT:
		if (!s->header_done)
			fprintf(s->out, "%-8s %9s %8s %7s %7s %7s %7s %8s %6s %6s\n", "TIME",
				"CHKSUM/s", "IRQ/s", "WINDOW", "IN-CSUM", "KERNEL", "USER",
				"WIN-HITS", "FAILS", "LOST");
		fprintf(s->out, "%-8s %9.0f %8.0f", when,
			delta(s, now, CHKWIN_CNT_CHKSUM) / elapsed,
			(delta(s, now, CHKWIN_CNT_IRQ_CLASS + CHKWIN_CLASS_WINDOW) +
			 delta(s, now, CHKWIN_CNT_IRQ_CLASS + CHKWIN_CLASS_CHKSUM) +
			 delta(s, now, CHKWIN_CNT_IRQ_CLASS + CHKWIN_CLASS_KERNEL) +
			 delta(s, now, CHKWIN_CNT_IRQ_CLASS + CHKWIN_CLASS_USER) +
			 delta(s, now, CHKWIN_CNT_IRQ_CLASS + CHKWIN_CLASS_UNKNOWN)) / elapsed);
		for (c = CHKWIN_CLASS_WINDOW; c <= CHKWIN_CLASS_USER; c++)
			fprintf(s->out, " %7.0f", delta(s, now, CHKWIN_CNT_IRQ_CLASS + c) / elapsed);
		fprintf(s->out, " %8llu %6llu %6llu\n",
			(unsigned long long)delta(s, now, CHKWIN_CNT_CHKSUM_WINDOW),
			(unsigned long long)delta(s, now, fail_idx), (unsigned long long)lost);
		break;
	case FORMAT_JSON:
		fprintf(s->out, "{\"time\":\"%s\",\"interval_s\":%.3f,\"chksum_per_s\":%.1f,"
			"\"irq_per_s\":{", when, elapsed,
			delta(s, now, CHKWIN_CNT_CHKSUM) / elapsed);
		for (c = 0; c < CHKWIN_CLASSES; c++)
			fprintf(s->out, "%s\"%s\":%.1f", c ? "," : "", chkwin_class_names[c],
				delta(s, now, CHKWIN_CNT_IRQ_CLASS + c) / elapsed);
		fprintf(s->out, "},\"sample_per_s\":{");
		for (c = 0; c < CHKWIN_CLASSES; c++)
			fprintf(s->out, "%s\"%s\":%.1f", c ? "," : "", chkwin_class_names[c],
				delta(s, now, CHKWIN_CNT_SAMPLE_CLASS + c) / elapsed);
		fprintf(s->out, "},\"window_hits\":%llu,\"failures\":%llu,\"lost\":%llu,"
			"\"total_window_hits\":%llu,\"total_failures\":%llu,\"total_lost\":%llu}\n",
			(unsigned long long)delta(s, now, CHKWIN_CNT_CHKSUM_WINDOW),
			(unsigned long long)delta(s, now, fail_idx), (unsigned long long)lost,
			(unsigned long long)now->v[CHKWIN_CNT_CHKSUM_WINDOW],
			(unsigned long long)now->v[fail_idx],
			(unsigned long long)chkwin_counts_lost(now));
		break;
	case FORMAT_CSV:
		if (!s->header_done) {
			fprintf(s->out, "time,interval_s,chksum_per_s");
			for (c = 0; c < CHKWIN_CLASSES; c++)
				fprintf(s->out, ",irq_%s_per_s", chkwin_class_names[c]);
			fprintf(s->out, ",window_hits,failures,lost\n");
		}
		fprintf(s->out, "%s,%.3f,%.1f", when, elapsed,
			delta(s, now, CHKWIN_CNT_CHKSUM) / elapsed);
		for (c = 0; c < CHKWIN_CLASSES; c++)
			fprintf(s->out, ",%.1f", delta(s, now, CHKWIN_CNT_IRQ_CLASS + c) / elapsed);
		fprintf(s->out, ",%llu,%llu,%llu\n",
			(unsigned long long)delta(s, now, CHKWIN_CNT_CHKSUM_WINDOW),
			(unsigned long long)delta(s, now, fail_idx), (unsigned long long)lost);
		break;
	}
	s->header_done = true;
	s->last = *now;
	fflush(s->out);
}

static bool in_window(const struct chkwin_plan *p, int func, int slot)
{
	uint64_t pc = p->func[func].start + (uint64_t)slot * 4;
	int i;

	for (i = 0; i < p->watched.n; i++)
		if (pc >= p->watched.w[i].first_addr && pc <= p->watched.w[i].last_addr)
			return true;
	return false;
}

void chkwin_summary_hist(struct chkwin_summary *s, const struct chkwin_plan *p,
			 const struct chkwin_hist *h)
{
	int func, slot;

	for (func = 0; func < CHKWIN_FUNCS; func++) {
		uint64_t max = 0;
		bool header = false;

		if (!p->func[func].name)
			continue;
		for (slot = 0; slot < CHKWIN_HIST_SLOTS; slot++) {
			uint64_t n = chkwin_hist_at(h, CHKWIN_HIST_IRQ, func, slot) +
				     chkwin_hist_at(h, CHKWIN_HIST_SAMPLE, func, slot);

			if (n > max)
				max = n;
		}
		for (slot = 0; slot < CHKWIN_HIST_SLOTS; slot++) {
			uint64_t irq = chkwin_hist_at(h, CHKWIN_HIST_IRQ, func, slot);
			uint64_t smp = chkwin_hist_at(h, CHKWIN_HIST_SAMPLE, func, slot);
			int bar, i;

			if (!irq && !smp)
				continue;
			if (s->format == FORMAT_JSON) {
				fprintf(s->out, "{\"hist\":\"%s\",\"offset\":%d,\"irq\":%llu,"
					"\"sample\":%llu,\"window\":%s}\n", p->func[func].name,
					slot * 4, (unsigned long long)irq, (unsigned long long)smp,
					in_window(p, func, slot) ? "true" : "false");
				continue;
			}
			if (s->format == FORMAT_CSV) {
				if (!header)
					fprintf(s->out, "hist_func,offset,irq,sample,window\n");
				header = true;
				fprintf(s->out, "%s,%d,%llu,%llu,%d\n", p->func[func].name, slot * 4,
					(unsigned long long)irq, (unsigned long long)smp,
					in_window(p, func, slot));
				continue;
			}
			if (!header)
				fprintf(s->out, "\nArrivals in %s (0x%llx) by offset:\n%8s %9s %9s  %s\n",
					p->func[func].name, (unsigned long long)p->func[func].start,
					"offset", "irqs", "samples", "distribution");
			header = true;
			bar = (int)((irq + smp) * BAR_WIDTH / max);
			fprintf(s->out, "  +0x%03x %9llu %9llu  |", slot * 4,
				(unsigned long long)irq, (unsigned long long)smp);
			for (i = 0; i < BAR_WIDTH; i++)
				fputc(i < bar ? '*' : ' ', s->out);
			fprintf(s->out, "|%s\n", in_window(p, func, slot) ? " <- window" : "");
		}
	}
	fflush(s->out);
}
