# Sourced, not run (no execute bit, so init refuses it as a scenario):
# what several scenarios need from the guest.  Set SCENARIO to the
# caller's name before sourcing; errors read "SCENARIO: error: ...".

fail() {
	echo "${SCENARIO:-scenario}: error: $*"
	exit 1
}

# cmdline_words KEY...: prints "KEY VALUE" for each KEY=VALUE word of the
# kernel command line, in order (the caller's last one wins).
cmdline_words() {
	for word in $(cat /proc/cmdline); do
		for key in "$@"; do
			case "$word" in
			"$key"=*) echo "$key ${word#*=}" ;;
			esac
		done
	done
}

# port_path NAME: the device of the virtio-serial port NAME, or fail.
port_path() {
	for port in /sys/class/virtio-ports/*; do
		if [ "$(cat "$port/name" 2> /dev/null)" = "$1" ]; then
			echo "/dev/${port##*/}"
			return 0
		fi
	done
	return 1
}

# wait_for_line PATTERN FILE PID TENTHS: true once FILE has a line
# matching PATTERN; false if PID ends or TENTHS tenths of a second pass.
wait_for_line() {
	tries=0
	until grep -q "$1" "$2"; do
		kill -0 "$3" 2> /dev/null && [ $tries -lt "$4" ] || return 1
		tries=$((tries + 1))
		sleep 0.1
	done
}

# await_line PATTERN FILE PID TENTHS WHAT: wait_for_line, or show FILE,
# stop PID and fail with "WHAT".
await_line() {
	wait_for_line "$1" "$2" "$3" "$4" && return 0
	cat "$2"
	kill "$3" 2> /dev/null
	fail "$5"
}

# lab_windows ARGS...: prints "--windows FILE" for the lab kernel's
# windows file (guest/run.py passes it as /tmp/host/lab.windows), unless
# there is none or ARGS name their own.
lab_windows() {
	for arg in "$@"; do
		case "$arg" in
		--windows | --windows=*) return 0 ;;
		esac
	done
	[ -f /tmp/host/lab.windows ] && echo "--windows /tmp/host/lab.windows"
	return 0
}

# start_chkwin OUTFILE ERRFILE ARGS...: starts chkwin in the background
# (its pid in chkwin_pid, stdout to OUTFILE, stderr to ERRFILE) and returns
# once every probe is attached.  Not for a redirected call: its own error
# lines go to stdout.
start_chkwin() {
	out=$1
	err=$2
	shift 2
	# Emptied first: the background job's own redirection may come after
	# the first look, which would find the last run's "recording" line.
	: > "$err"
	chkwin $(lab_windows "$@") "$@" > "$out" 2> "$err" &
	chkwin_pid=$!
	await_line '^chkwin: recording' "$err" $chkwin_pid 600 "chkwin did not start recording"
}

# stop_chkwin ERRFILE: SIGINT, wait, fail unless chkwin exited 0 with its
# closing record ("chkwin: result {...}" on its stderr), kept in
# $chkwin_result for the host.
# Not for $(...): a subshell cannot wait for chkwin.
stop_chkwin() {
	kill -INT $chkwin_pid
	wait $chkwin_pid || { cat "$1"; fail "chkwin failed"; }
	chkwin_result=$(sed -n 's/^chkwin: result //p' "$1")
	[ -n "$chkwin_result" ] || { cat "$1"; fail "chkwin printed no closing record"; }
}
