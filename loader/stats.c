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

/* A per-CPU map's values come 8-byte aligned: the array's stride is the struct. */
_Static_assert(sizeof(struct chkwin_cpu_state) % 8 == 0, "cpu_state values pack");

/* The counters of each CPU's element of the cpu_state map, summed. */
int chkwin_counts_read(int map_fd, int ncpus, struct chkwin_counts *out)
{
	struct chkwin_cpu_state *vals = calloc((size_t)ncpus, sizeof(*vals));
	const uint32_t key = 0;
	int cpu, i;

	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(map_fd, &key, vals)) {
		int err = -errno;

		fprintf(stderr, "chkwin: error: reading counters: %s\n", strerror(errno));
		free(vals);
		return err;
	}
	for (i = 0; i < CHKWIN_COUNTERS; i++) {
		out->v[i] = 0;
		for (cpu = 0; cpu < ncpus; cpu++)
			out->v[i] += vals[cpu].counters[i];
	}
	free(vals);
	return 0;
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
