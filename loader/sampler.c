// SPDX-License-Identifier: GPL-2.0
/*
 * The sampler: a cpu-clock software event fires from an hrtimer interrupt,
 * so each tick is an interrupt of known rate whose program sees the
 * interrupted registers.  perf's own throttling may lower the rate; the
 * sample counters tell how many ticks really came.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>

#include "sampler.h"

static int open_cpu_clock(long hz, int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000000UL / (unsigned long)hz,
	};

	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int chkwin_sampler_start(struct chkwin_sampler *s, struct bpf_program *prog,
			 long hz, int cpu)
{
	int ncpus = libbpf_num_possible_cpus(), i;

	memset(s, 0, sizeof(*s));
	if (ncpus < 0) {
		fprintf(stderr, "chkwin: error: cannot count CPUs: %s\n", strerror(-ncpus));
		return ncpus;
	}
	s->ncpus = ncpus;
	s->fds = calloc((size_t)ncpus, sizeof(*s->fds));
	s->links = calloc((size_t)ncpus, sizeof(*s->links));
	if (!s->fds || !s->links) {
		fprintf(stderr, "chkwin: error: out of memory for the sampler\n");
		chkwin_sampler_stop(s);
		return -ENOMEM;
	}
	for (i = 0; i < ncpus; i++)
		s->fds[i] = -1;
	for (i = 0; i < ncpus; i++) {
		if (cpu >= 0 && i != cpu)
			continue;
		s->fds[i] = open_cpu_clock(hz, i);
		if (s->fds[i] < 0) {
			int err = errno;

			if (err == ENODEV)	/* possible but offline */
				continue;
			fprintf(stderr, "chkwin: error: perf_event_open(cpu-clock, %ld Hz, cpu %d): %s\n",
				hz, i, strerror(err));
			chkwin_sampler_stop(s);
			return -err;
		}
		s->links[i] = bpf_program__attach_perf_event(prog, s->fds[i]);
		if (!s->links[i]) {
			int err = errno;

			fprintf(stderr, "chkwin: error: attaching the sampler on cpu %d: %s\n",
				i, strerror(err));
			chkwin_sampler_stop(s);
			return -err;
		}
	}
	return 0;
}

void chkwin_sampler_stop(struct chkwin_sampler *s)
{
	int i;

	for (i = 0; i < s->ncpus; i++) {
		if (s->links && s->links[i])
			bpf_link__destroy(s->links[i]);
		if (s->fds && s->fds[i] >= 0)
			close(s->fds[i]);
	}
	free(s->links);
	free(s->fds);
	memset(s, 0, sizeof(*s));
}
