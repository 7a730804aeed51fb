// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "names.h"
#include "stats.h"

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

int chkwin_watch_counts_read(int map_fd, int ncpus, uint64_t *out, uint32_t n)
{
	return sum_percpu(map_fd, ncpus, out, n);
}

uint64_t chkwin_counts_lost(const struct chkwin_counts *c)
{
	uint64_t lost = 0;
	int i;

	for (i = 0; i < CHKWIN_PROBES; i++)
		lost += c->v[CHKWIN_CNT_LOST + i];
	return lost;
}
