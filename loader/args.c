// SPDX-License-Identifier: GPL-2.0
/* chkwin's command line, in the style of the libbpf-tools. */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "opts.h"

const char *argp_program_version = "chkwin 0.1";

static const char doc[] =
"Record where interrupts land relative to ext4 checksum computation.\n"
"\n"
"EXAMPLES:\n"
"    chkwin                    # summary every second until Ctrl-C\n"
"    chkwin -d 60 -o run.log   # 60 s, every record to run.log\n"
"    chkwin -R failures -o f.log   # flight recorder: history of each failure\n"
"    chkwin 5 12 -f json       # a JSON summary line every 5 s, 12 times\n"
"    chkwin -F 20000 -d 30     # add a 20 kHz cpu-clock interrupt source\n"
"    chkwin --windows w.txt -o run.log   # arrivals in stackscan's windows\n"
"    chkwin -m fallback -v     # kprobes as on a stock kernel, show how\n"
"    chkwin --no-block --no-softirq -c 1   # CPU 1 only, fewer probes\n"
"    chkwin --dry-run          # probe the kernel, print the plan, exit\n"
"    chkwin -r run.log -f csv  # decode a log\n";

enum {
	OPT_NO_BASE = 0x100,	/* + enum chkwin_hook */
	OPT_DRY_RUN = 0x200,
	OPT_HISTORY,
	OPT_WAKEUP,
	OPT_FLOOR,
	OPT_RINGBUF,
	OPT_KALLSYMS,
	OPT_WINDOWS,
	OPT_PROG_STATS,
	OPT_SNAPSHOT_ON,
	OPT_IRQ_PC,
};

static const struct argp_option fixed_options[] = {
	{ "duration", 'd', "SECONDS", 0, "Stop after SECONDS", 0 },
	{ "output", 'o', "FILE", 0, "Write what --record keeps to FILE (binary log, docs/log-format.md; never overwritten)", 0 },
	{ "format", 'f', "FMT", 0, "Live summary and --read output: text (default), json or csv", 0 },
	{ "cpu", 'c', "N", 0, "Record CPU N only", 0 },
	{ "sample-hz", 'F', "HZ", 0, "Add a cpu-clock sampler at HZ per CPU (an interrupt source; the log says so)", 0 },
	{ "mode", 'm', "MODE", 0, "auto (default), tracepoint (lab kernels only) or fallback (kprobes, and no __irq_regs, as on a kernel without KALLSYMS_ALL)", 0 },
	{ "irq-pc", OPT_IRQ_PC, "HOW", 0, "Where the interrupted pc comes from: auto (default: the first this kernel allows), irq_regs (__irq_regs), kprobe (do_interrupt_handler's regs) or stack (pc only)", 0 },
	{ "read", 'r', "FILE", 0, "Decode the log FILE and exit", 0 },
	{ "quiet", 'q', NULL, 0, "No live summary", 0 },
	{ "verbose", 'v', NULL, 0, "libbpf debug output and the attach mode of each probe", 0 },
	{ "dry-run", OPT_DRY_RUN, NULL, 0, "Probe features, print the plan, attach nothing", 0 },
	{ "record", 'R', "WHAT", 0, "What reaches the log: all (default) records, failures (per-CPU history sent when a checksum fails) or counts (counters and histograms only)", 0 },
	{ "history", OPT_HISTORY, "K", 0, "--record failures: records per history ring (default 256)", 0 },
	{ "snapshot-on", OPT_SNAPSHOT_ON, "WHAT", 0, "--record failures: failure (default) snapshots the history on each checksum failure; window also on each arrival in a window", 0 },
	{ "wakeup-kb", OPT_WAKEUP, "KB", 0, "Wake the reader when KB wait (default 256; 0: per record)", 0 },
	{ "floor", OPT_FLOOR, NULL, OPTION_HIDDEN, "Bench: attach programs that return at once", 0 },
	{ "prog-stats", OPT_PROG_STATS, NULL, 0, "Count each program's runs and run time (kernel BPF stats) for the closing record", 0 },
	{ "ringbuf-mb", OPT_RINGBUF, "MB", 0, "Ring buffer size (default 16)", 0 },
	{ "kallsyms", OPT_KALLSYMS, "FILE", OPTION_HIDDEN, "Read symbols from FILE", 0 },
	{ "windows", OPT_WINDOWS, "FILE", 0, "Watch the windows FILE names (docs/windows.md, stackscan --windows-out): arrivals in one are class window, counted per window", 0 },
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Show the full help", 0 },
};

#define NFIXED (sizeof(fixed_options) / sizeof(fixed_options[0]))
#define HOOK_HELP(NAME, name, probe, help) [HOOK_##NAME] = help,
static const char *const hook_help[HOOKS] = { CHKWIN_HOOK_TABLE(HOOK_HELP) };
/* --no-NAME for the hooks that have one: the name with dashes, as options are spelled. */
static char no_names[HOOKS][32];
/* The fixed options, a group title, a --no-NAME per hook, the terminator. */
static struct argp_option options[NFIXED + 1 + HOOKS + 1];

static void make_options(void)
{
	struct argp_option *o = options + NFIXED;
	char *c;
	int h;

	memcpy(options, fixed_options, sizeof(fixed_options));
	*o++ = (struct argp_option){ NULL, 0, NULL, 0, "Probes (each on by default):", 1 };
	for (h = 0; h < HOOKS; h++) {
		if (!hook_help[h])
			continue;
		snprintf(no_names[h], sizeof(no_names[h]), "no-%s", chkwin_hook_names[h]);
		for (c = no_names[h]; (c = strchr(c, '_')); )
			*c = '-';
		*o++ = (struct argp_option){ no_names[h], OPT_NO_BASE + h, NULL, 0, hook_help[h], 1 };
	}
}

static double parse_seconds(struct argp_state *state, const char *what, const char *arg)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || *end || !(v > 0) || v > 1e7)
		argp_error(state, "%s must be a positive number of seconds, not '%s'", what, arg);
	return v;
}

static long parse_long(struct argp_state *state, const char *what, const char *arg,
		       long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || v < min || v > max)
		argp_error(state, "%s must be a whole number from %ld to %ld, not '%s'",
			   what, min, max, arg);
	return v;
}

/* Indexed by the enums they name; NULL-terminated. */
static const char *const formats[] = { "text", "json", "csv", NULL };
static const char *const snapshot_triggers[] = { "failure", "window", NULL };
static const char *const modes[] = { "auto", "tracepoint", "fallback", NULL };
static const char *const irq_pcs[] = { "auto", "irq_regs", "kprobe", "stack", NULL };

static int parse_choice(struct argp_state *state, const char *what, const char *arg,
			const char *const *names)
{
	char list[128] = "";
	int i;

	for (i = 0; names[i]; i++) {
		if (!strcmp(arg, names[i]))
			return i;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
			 i ? ", " : "", names[i]);
	}
	argp_error(state, "%s must be one of %s, not '%s'", what, list, arg);
	return 0;
}

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct chkwin_opts *o = state->input;

	switch (key) {
	case 'd':
		o->duration = parse_seconds(state, "duration", arg);
		break;
	case 'o':
		o->output = arg;
		break;
	case 'f':
		o->format = (enum chkwin_format)parse_choice(state, "format", arg, formats);
		break;
	case 'c':
		o->cpu = (int)parse_long(state, "cpu", arg, 0, 4095);
		break;
	case 'F':
		o->sample_hz = parse_long(state, "sample-hz", arg, 1, 100000);
		break;
	case 'm':
		o->mode = (enum chkwin_attach_mode)parse_choice(state, "mode", arg, modes);
		break;
	case OPT_IRQ_PC:
		o->irq_pc = (enum chkwin_irq_pc)parse_choice(state, "irq-pc", arg, irq_pcs);
		break;
	case 'r':
		o->read_path = arg;
		break;
	case 'q':
		o->quiet = true;
		break;
	case 'v':
		o->verbose = true;
		break;
	case OPT_DRY_RUN:
		o->dry_run = true;
		break;
	case 'R':
		o->record = (enum chkwin_record_mode)parse_choice(state, "record", arg,
								  chkwin_record_names);
		break;
	case OPT_HISTORY:
		o->history = parse_long(state, "history", arg, 1, CHKWIN_HISTORY_MAX);
		break;
	case OPT_WAKEUP:
		o->wakeup_kb = parse_long(state, "wakeup-kb", arg, 0, 1L << 20);
		break;
	case OPT_FLOOR:
		o->floor = true;
		break;
	case OPT_PROG_STATS:
		o->prog_stats = true;
		break;
	case OPT_SNAPSHOT_ON:
		o->snapshot_window = parse_choice(state, "snapshot-on", arg, snapshot_triggers) == 1;
		break;
	case OPT_RINGBUF:
		o->ringbuf_mb = parse_long(state, "ringbuf-mb", arg, 1, 1024);
		break;
	case OPT_KALLSYMS:
		o->kallsyms = arg;
		break;
	case OPT_WINDOWS:
		o->windows = arg;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case ARGP_KEY_END:
		/* Bad usage, as argp's own errors are: one status for all. */
		if (o->read_path && (o->output || o->dry_run))
			argp_failure(state, argp_err_exit_status, 0,
				     "error: --read takes only --format");
		if (o->snapshot_window && o->record != CHKWIN_RECORD_FAILURES)
			argp_failure(state, argp_err_exit_status, 0,
				     "error: --snapshot-on window needs --record failures");
		break;
	case ARGP_KEY_ARG:
		if (state->arg_num == 0)
			o->interval = parse_seconds(state, "interval", arg);
		else if (state->arg_num == 1)
			o->count = parse_long(state, "count", arg, 1, 1L << 30);
		else
			argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		if (key >= OPT_NO_BASE && key < OPT_NO_BASE + HOOKS) {
			o->off[key - OPT_NO_BASE] = true;
			break;
		}
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

void chkwin_parse_args(int argc, char **argv, struct chkwin_opts *opts)
{
	static const struct argp argp = { options, parse_opt, "[INTERVAL [COUNT]]", doc,
					  NULL, NULL, NULL };

	memset(opts, 0, sizeof(*opts));
	opts->interval = 1.0;
	opts->cpu = -1;
	opts->ringbuf_mb = 16;
	opts->history = 256;
	opts->wakeup_kb = 256;
	opts->kallsyms = "/proc/kallsyms";
	/* getopt's own messages start with argv[0]: name the tool, not its path. */
	argv[0] = (char *)"chkwin";
	make_options();
	/* 2, as the Python tools (argparse) exit on bad usage, not argp's 64 (EX_USAGE). */
	argp_err_exit_status = 2;
	argp_parse(&argp, argc, argv, 0, NULL, opts);
}
