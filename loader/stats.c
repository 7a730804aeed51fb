// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "stats.h"

const char *const chkwin_class_names[CHKWIN_CLASSES] = {
	[CHKWIN_CLASS_WINDOW] = "window",
	[CHKWIN_CLASS_CHKSUM] = "chksum",
	[CHKWIN_CLASS_KERNEL] = "kernel",
	[CHKWIN_CLASS_USER] = "user",
	[CHKWIN_CLASS_UNKNOWN] = "unknown",
};

const char *const chkwin_probe_names[CHKWIN_PROBES] = {
	[CHKWIN_PROBE_CHKSUM] = "chksum",
	[CHKWIN_PROBE_VERIFY] = "verify",
	[CHKWIN_PROBE_IGET] = "iget",
	[CHKWIN_PROBE_IRQ] = "irq",
	[CHKWIN_PROBE_SOFTIRQ] = "softirq",
	[CHKWIN_PROBE_BLOCK] = "block",
	[CHKWIN_PROBE_SAMPLE] = "sample",
	[CHKWIN_PROBE_SNAPSHOT] = "snapshot",
};

static const char *const plain_counters[CHKWIN_CNT_IRQ_CLASS] = {
	[CHKWIN_CNT_CHKSUM] = "chksum",
	[CHKWIN_CNT_CHKSUM_WINDOW] = "chksum_window",
	[CHKWIN_CNT_CHKSUM_NESTED] = "chksum_nested",
	[CHKWIN_CNT_VERIFY] = "verify",
	[CHKWIN_CNT_VERIFY_BAD] = "verify_bad",
	[CHKWIN_CNT_IGET] = "iget",
	[CHKWIN_CNT_IGET_BADCRC] = "iget_badcrc",
	[CHKWIN_CNT_IRQ_UNHANDLED] = "irq_unhandled",
	[CHKWIN_CNT_SOFTIRQ] = "softirq",
	[CHKWIN_CNT_BLOCK] = "block",
	[CHKWIN_CNT_SNAPSHOT] = "snapshot",
	[CHKWIN_CNT_EVICTED] = "evicted",
	[CHKWIN_CNT_FROZEN] = "frozen",
};

const char *chkwin_counter_name(int i, char *buf, unsigned long len)
{
	if (i < CHKWIN_CNT_IRQ_CLASS)
		return plain_counters[i];
	if (i < CHKWIN_CNT_SAMPLE_CLASS)
		snprintf(buf, len, "irq.%s", chkwin_class_names[i - CHKWIN_CNT_IRQ_CLASS]);
	else if (i < CHKWIN_CNT_LOST)
		snprintf(buf, len, "sample.%s", chkwin_class_names[i - CHKWIN_CNT_SAMPLE_CLASS]);
	else
		snprintf(buf, len, "lost.%s", chkwin_probe_names[i - CHKWIN_CNT_LOST]);
	return buf;
}

/* Sum entries [0, n) of a per-CPU array of u64 into out. */
static int sum_percpu(int map_fd, int ncpus, uint64_t *out, uint32_t n)
{
	uint64_t *vals = calloc((size_t)ncpus, sizeof(*vals));
	uint32_t key;
	int cpu;

	if (!vals)
		return -ENOMEM;
	for (key = 0; key < n; key++) {
		if (bpf_map_lookup_elem(map_fd, &key, vals)) {
			int err = -errno;

			fprintf(stderr, "chkwin: error: reading counters: %s\n", strerror(errno));
			free(vals);
			return err;
		}
		out[key] = 0;
		for (cpu = 0; cpu < ncpus; cpu++)
			out[key] += vals[cpu];
	}
	free(vals);
	return 0;
}

int chkwin_counts_read(int map_fd, int ncpus, struct chkwin_counts *out)
{
	return sum_percpu(map_fd, ncpus, out->v, CHKWIN_COUNTERS);
}

int chkwin_hist_read(int map_fd, int ncpus, struct chkwin_hist *out)
{
	return sum_percpu(map_fd, ncpus, out->v, CHKWIN_HIST_ENTRIES);
}

uint64_t chkwin_counts_lost(const struct chkwin_counts *c)
{
	uint64_t lost = 0;
	int i;

	for (i = 0; i < CHKWIN_PROBES; i++)
		lost += c->v[CHKWIN_CNT_LOST + i];
	return lost;
}
