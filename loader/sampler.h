/* SPDX-License-Identifier: GPL-2.0 */
/* The optional interrupt source: a cpu-clock perf event per CPU. */
#ifndef CHKWIN_SAMPLER_H
#define CHKWIN_SAMPLER_H

#include <bpf/libbpf.h>

struct chkwin_sampler {
	int ncpus;
	int *fds;
	struct bpf_link **links;
};

/* Attach prog to a hz cpu-clock event on cpu, or on every CPU if cpu < 0. */
int chkwin_sampler_start(struct chkwin_sampler *s, struct bpf_program *prog,
			 long hz, int cpu);
void chkwin_sampler_stop(struct chkwin_sampler *s);

#endif /* CHKWIN_SAMPLER_H */
