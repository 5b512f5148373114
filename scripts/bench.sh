#!/usr/bin/env bash
# zarrfs benchmark: makes its own datasets with zarr-python 3, measures zarrfs against zarr-python
# and against plain page-cache reads in one run, prints a table of ratios and writes BENCHMARKS.md.
#
#   scripts/bench.sh            full run (~256 MiB per compressed array, under ~10 minutes)
#   scripts/bench.sh --quick    small sizes, one minute, for smoke testing
#
# Run as root (it mounts, and drops the kernel page cache with /proc/sys/vm/drop_caches).
#
# Environment:
#   ZARRFS_BIN      zarrfs binary to test (default: cargo build --release, then target/release/zarrfs)
#   ZARRFS_COMMIT   what the report names as the binary's source (default: the repository's HEAD)
#   BENCH_DIR       work directory for datasets, mounts and logs (default /tmp/zarrfs-bench)
#   BENCH_SIZE_MIB  decoded size of each compressed array in MiB (default 256; --quick: 32)
#   BENCH_REPS      repetitions per measurement, the best counts (default 5; --quick: 2)
#   BENCH_TIMEOUT   seconds any single step may take before it is killed (default 300)
#   PYTHON          interpreter with zarr 3, numcodecs and numpy (default python3); the remote
#                   section also needs obstore (pip install obstore) and s3s-fs on PATH
#                   (cargo install s3s-fs --version 0.14.1 --features binary)
#   REFS_PYTHON     interpreter for the refs section (Python >= 3.12 with zarr 3, icechunk 2,
#                   kerchunk, h5py, netCDF4, fsspec; default $PYTHON)
#
# Options: --quick, --output FILE (default: BENCHMARKS.md at the repository root for a full run,
# $BENCH_DIR/run/BENCHMARKS.md for --quick), --only SECTIONS (comma list of
# full,frame,column,slice,random,parallel,meta,scale,rss,remote,backing,refs; for debugging), -h.
set -euo pipefail
export LC_ALL=C
# Neither side uses BLAS: numpy's OpenBLAS threads would only spin at import, on the cores the
# measured reads need (one per core; measured at a quarter of the machine during a frame read).
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
# The machine's cores (nproc would answer OMP_NUM_THREADS).
CORES=$(getconf _NPROCESSORS_ONLN)

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

QUICK=0
OUTPUT=""
ONLY="full,frame,column,slice,random,parallel,meta,scale,rss,remote,backing,refs"
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=1 ;;
        --output) OUTPUT=$2; shift ;;
        --output=*) OUTPUT=${1#*=} ;;
        --only) ONLY=$2; shift ;;
        --only=*) ONLY=${1#*=} ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$SCRIPTS")
BENCH_DIR=${BENCH_DIR:-/tmp/zarrfs-bench}
PYTHON=${PYTHON:-python3}
REFS_PYTHON=${REFS_PYTHON:-$PYTHON}
TMO=${BENCH_TIMEOUT:-300}
# numpy's OpenBLAS starts a worker thread per core at import, which spins for a while waiting for
# work: on a small machine that takes a core from whatever the reader is timing (zarrfs's daemon,
# or zarr-python's own decoding). None of the readers here does linear algebra.
export OPENBLAS_NUM_THREADS=1
if [ "$QUICK" = 1 ]; then
    SIZE_MIB=${BENCH_SIZE_MIB:-32}
    REPS=${BENCH_REPS:-2}
    TREE_GROUPS=20; TREE_ARRAYS=50
    SCALE_GROUPS="20 100"
    RAND_SECS=1; RAND_MAX=200000
else
    SIZE_MIB=${BENCH_SIZE_MIB:-256}
    REPS=${BENCH_REPS:-5}
    TREE_GROUPS=100; TREE_ARRAYS=100
    SCALE_GROUPS="100 1000"
    RAND_SECS=3; RAND_MAX=2000000
fi
[ -n "$OUTPUT" ] || { if [ "$QUICK" = 1 ]; then OUTPUT=$BENCH_DIR/run/BENCHMARKS.md; else OUTPUT=$REPO/BENCHMARKS.md; fi; }

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (mounting, /proc/sys/vm/drop_caches)"
[ -e /dev/fuse ] || die "/dev/fuse is missing"
for tool in dd cmp find timeout mountpoint cc awk; do
    command -v "$tool" >/dev/null || die "$tool is missing"
done
"$PYTHON" -c 'import zarr, numcodecs, numpy; assert int(zarr.__version__.split(".")[0]) >= 3' 2>/dev/null \
    || die "$PYTHON needs zarr>=3, numcodecs and numpy"

# ---------------------------------------------------------------------------------------------
# The binary.
BIN_GIVEN=1
if [ -z "${ZARRFS_BIN:-}" ]; then
    BIN_GIVEN=0
    log "building zarrfs (cargo build --release)"
    (cd "$REPO" && cargo build --release --quiet) || die "cargo build failed"
    ZARRFS_BIN=${CARGO_TARGET_DIR:-$REPO/target}/release/zarrfs
fi
[ -x "$ZARRFS_BIN" ] || die "no zarrfs binary at $ZARRFS_BIN"
ZARRFS_BIN=$(cd "$(dirname "$ZARRFS_BIN")" && pwd)/$(basename "$ZARRFS_BIN")

# ---------------------------------------------------------------------------------------------
# Work directory, bookkeeping, cleanup.
RUN=$BENCH_DIR/run
MNTROOT=$BENCH_DIR/mnt
mkdir -p "$BENCH_DIR" "$MNTROOT"

# Unmount whatever an earlier, interrupted run left under $MNTROOT.
stale_mounts() { awk -v r="$MNTROOT/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts; }

# Processes whose command line has MNT as one whole argument: the daemon serving MNT. (The
# pattern is passed through a file so that grep does not find itself.)
daemons_of() { grep -lxzsF -f <(printf '%s\n' "$1") /proc/[0-9]*/cmdline 2>/dev/null || true; }

# Unmounts MNT [default $MNT], waits for its daemon to exit and removes the directory. Waiting
# matters: a zarrfs daemon that exits after `zarrfs unmount` unmounts its mount point path once
# more on the way out, which takes down a new mount made on the same path in the meantime. Every
# mount here gets a fresh directory, and the next one starts only when the last daemon is gone.
unmount_fs() {
    local mnt=${1:-$MNT} i
    if grep -qs " $mnt " /proc/self/mounts; then
        if ! timeout -k 5 30 "$ZARRFS_BIN" unmount "$mnt" >>"$RUN/unmount.log" 2>&1; then
            log "zarrfs unmount $mnt failed; trying umount"
            if ! timeout -k 5 15 umount "$mnt" 2>/dev/null; then
                # A daemon that does not answer: abort its FUSE connection, detach lazily.
                local dev
                dev=$(awk -v m="$mnt" '$5 == m { print $3 }' /proc/self/mountinfo | head -n1)
                if [ -n "$dev" ] && [ -e "/sys/fs/fuse/connections/${dev#*:}/abort" ]; then
                    echo 1 > "/sys/fs/fuse/connections/${dev#*:}/abort" || true
                fi
                umount -l "$mnt" 2>/dev/null || true
            fi
        fi
    fi
    for i in $(seq 1500); do
        [ -z "$(daemons_of "$mnt")" ] && break
        [ "$i" = 100 ] && log "waiting for the daemon of $mnt to exit"
        sleep 0.02
    done
    [ -z "$(daemons_of "$mnt")" ] || log "the daemon of $mnt is still running 30 s after unmounting"
    rmdir "$mnt" 2>/dev/null || true
}

SHM_RAW=/dev/shm/zarrfs-bench-raw.$$.bin
cleanup() {
    local m pid
    set +e
    rm -f "$SHM_RAW"
    for m in $(stale_mounts); do unmount_fs "$m"; done
    if [ -f "$RUN/pids" ]; then
        while read -r pid; do
            kill -0 "$pid" 2>/dev/null && kill "$pid" 2>/dev/null
        done < "$RUN/pids"
        : > "$RUN/pids"
    fi
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM

for m in $(stale_mounts); do unmount_fs "$m"; done
rmdir "$MNTROOT"/* 2>/dev/null || true
rm -rf "$RUN"
mkdir -p "$RUN"
RESULTS=$RUN/results.tsv
: > "$RESULTS"
: > "$RUN/pids"

rec() { printf '%s\t%s\n' "$1" "$2" >> "$RESULTS"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.6f", b - a }'; }
py() { timeout -k 5 "$TMO" "$PYTHON" "$@"; }
jget() { "$PYTHON" -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])' "$1"; }

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
# CPU seconds (user + system) used so far by the daemon serving $MNT.
daemon_cpu() {
    local f
    f=$(daemons_of "$MNT" | head -n1)
    [ -n "$f" ] || { echo 0; return; }
    awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "${f%/cmdline}/stat"
}
# The whole machine's busy and total CPU time so far, in clock ticks (/proc/stat).
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit }' /proc/stat; }
# Cores of the machine busy between two machine_ticks readings $1 and $2.
busy_cores() {
    awk -v a="$1" -v b="$2" -v n="$CORES" 'BEGIN { split(a, x, " "); split(b, y, " ");
        if (y[2] > x[2]) printf "%.2f", n * (y[1] - x[1]) / (y[2] - x[2]); else print "null" }'
}
# Reads files (or whole directories) so that they sit in the page cache.
warm() { find "$@" -type f -exec cat {} + > /dev/null; }
# The state every cold measurement starts from: page cache dropped, then the store's compressed
# chunk files read back so that both sides decode from memory.
cold_prep() { drop_caches; warm "$@"; }

MOUNT_SEQ=0
new_mnt() { # sets MNT to a fresh, empty directory
    MOUNT_SEQ=$((MOUNT_SEQ + 1))
    MNT=$MNTROOT/${SECTION:-x}.$BASHPID.$MOUNT_SEQ
    mkdir -p "$MNT"
}

mount_fs() { # STORE [zarrfs options...]: daemon mode on a fresh $MNT, returns once mounted
    local store=$1
    shift
    new_mnt
    timeout -k 5 60 "$ZARRFS_BIN" "$@" --log-file "$RUN/zarrfs.log" "$store" "$MNT" \
        || die "mounting $store on $MNT failed (log: $RUN/zarrfs.log)"
}

mount_fg() { # STORE [options...]: foreground daemon in the background on a fresh $MNT, sets FG_PID
    local store=$1 mnt i
    shift
    new_mnt
    mnt=$MNT
    "$ZARRFS_BIN" -f "$@" "$store" "$mnt" >>"$RUN/zarrfs-fg.log" 2>&1 &
    FG_PID=$!
    echo "$FG_PID" >> "$RUN/pids"
    for i in $(seq 3000); do
        grep -qs " $mnt " /proc/self/mounts && return 0
        kill -0 "$FG_PID" 2>/dev/null || die "zarrfs -f exited before mounting (log: $RUN/zarrfs-fg.log)"
        sleep 0.01
    done
    die "zarrfs -f did not mount $mnt within 30 s"
}

# dd's own elapsed seconds for reading FILE [SKIP_MIB COUNT_MIB] with bs=1M.
dd_secs() {
    local out
    out=$(timeout -k 5 "$TMO" dd if="$1" of=/dev/null bs=1M ${2:+skip=$2} ${3:+count=$3} 2>&1) \
        || { log "dd $1 failed: $out"; return 1; }
    awk '/copied/ { print $(NF-3) }' <<<"$out"
}

# Runs a section in a subshell with errexit; a failure is recorded and the run goes on.
section() {
    local name=$1 rc
    case ",$ONLY," in *",$name,"*) ;; *) return 0 ;; esac
    log "== $name"
    SECTION=$name
    set +e
    ( set -e; "section_$name" )
    rc=$?
    set -e
    if [ $rc != 0 ]; then
        log "section $name failed (exit $rc); see $RUN/*.log"
        rec "error.$name" "\"section failed with exit status $rc\""
    fi
    cleanup
    set -e
}

# ---------------------------------------------------------------------------------------------
# Datasets.
DATA=$BENCH_DIR/arrays-${SIZE_MIB}M
TREE=$BENCH_DIR/tree-${TREE_GROUPS}x${TREE_ARRAYS}
log "datasets under $BENCH_DIR (zarr-python $("$PYTHON" -c 'import zarr; print(zarr.__version__)'))"
py "$SCRIPTS/bench_data.py" arrays "$DATA" --size-mib "$SIZE_MIB"
py "$SCRIPTS/bench_data.py" tree "$TREE" --groups "$TREE_GROUPS" --arrays "$TREE_ARRAYS"
STORE=$DATA/arrays.zarr
RAW=$DATA/raw.bin
TSTORE=$TREE/tree.zarr
read -r T Y X TS < <("$PYTHON" -c 'import json,sys; p=json.load(open(sys.argv[1])); print(*p["shape"], p["stack_frames"])' "$DATA/params.json")
BYTES=$((T * Y * X * 4))
FRAME_BYTES=$((Y * X * 4))
rec bytes.array "$BYTES"
SIZES=$("$PYTHON" -c '
import json, sys
s = json.load(open(sys.argv[1])); n = int(sys.argv[2])
print("Stored sizes: " + ", ".join(f"{k} {v / 2**20:.0f} MiB ({100 * v / n:.0f} %)" for k, v in s.items() if "/" not in k) + ".")' \
    "$DATA/sizes.json" "$BYTES")

# ---------------------------------------------------------------------------------------------
# 1. Full sequential read.
section_full() {
    local codec r s cold warm c0
    for codec in zstd blosc gzip; do
        for r in $(seq "$REPS"); do
            cold_prep "$STORE/$codec"
            mount_fs "$STORE"
            c0=$(daemon_cpu)
            cold=$(dd_secs "$MNT/$codec"); rec "full.$codec.cold" "$cold"
            rec "full.$codec.cold_cpu" "$(awk -v a="$c0" -v b="$(daemon_cpu)" 'BEGIN { print b - a }')"
            warm=$(dd_secs "$MNT/$codec"); rec "full.$codec.warm" "$warm"
            if [ "$r" = 1 ]; then
                if cmp -s "$MNT/$codec" "$RAW"; then rec "check.full.$codec" ok
                else rec "check.full.$codec" "\"MISMATCH: $codec differs from raw.bin\""; fi
            fi
            unmount_fs
            s=$(py "$SCRIPTS/bench_read.py" zarr "$STORE/$codec" : --warmup "$STORE/$codec" | jget seconds)
            rec "full.$codec.zarr" "$s"
            log "full $codec rep $r: zarrfs cold $cold s, warm $warm s; zarr-python $s s"
        done
    done
    warm "$RAW"
    for r in $(seq "$REPS"); do
        rec full.raw.pagecache "$(dd_secs "$RAW")"
    done
    # The same file on tmpfs: page cache made of 4 KiB pages (FUSE files get no large folios
    # here), to tell the kernel's share of a warm read from zarrfs's.
    if [ -d /dev/shm ] && [ "$(df -Pk /dev/shm | awk 'NR == 2 { printf "%d", $4 / 1024 }')" -gt $((2 * BYTES >> 20)) ]; then
        cp "$RAW" "$SHM_RAW"
        dd_secs "$SHM_RAW" > /dev/null
        for r in $(seq "$REPS"); do rec full.raw.tmpfs "$(dd_secs "$SHM_RAW")"; done
        rm -f "$SHM_RAW"
    fi
}

# 2. One frame, chunks matching frames and not; 3. column slices through numpy.memmap.
# Compare the two sides' values (sums) on the first repetition.
cold_pair() { # KEY ARRAY SEL METHOD SHAPE
    local key=$1 arr=$2 sel=$3 method=$4 shape=$5 r jz jp
    for r in $(seq "$REPS"); do
        cold_prep "$STORE/$arr"
        mount_fs "$STORE"
        jz=$(py "$SCRIPTS/bench_read.py" file "$MNT/$arr" "$sel" --shape "$shape" --method "$method" --warmup)
        unmount_fs
        jp=$(py "$SCRIPTS/bench_read.py" zarr "$STORE/$arr" "$sel" --warmup "$STORE/$arr")
        rec "$key.zarrfs" "$(jget seconds <<<"$jz")"
        rec "$key.zarr" "$(jget seconds <<<"$jp")"
        if [ "$r" = 1 ]; then
            if [ "$(jget sum <<<"$jz")" = "$(jget sum <<<"$jp")" ]; then rec "check.$key" ok
            else rec "check.$key" "\"MISMATCH: $arr[$sel] sums differ: zarrfs $(jget sum <<<"$jz"), zarr-python $(jget sum <<<"$jp")\""; fi
        fi
    done
    log "$key: zarrfs $(grep -P "^$key.zarrfs\t" "$RESULTS" | cut -f2 | sort -g | head -n1) s, zarr-python $(grep -P "^$key.zarr\t" "$RESULTS" | cut -f2 | sort -g | head -n1) s"
}

section_frame() {
    local t=$((TS / 2 + 1))
    cold_pair frame.by_frame stack/by_frame "$t" read "$TS,$Y,$X"
    cold_pair frame.by_block stack/by_block "$t" read "$TS,$Y,$X"
}

section_column() {
    cold_pair col.plane zstd ":,:,$((X / 2 + 3))" memmap "$T,$Y,$X"
    cold_pair col.pixel zstd ":,$((Y / 3)),$((X / 2 + 3))" memmap "$T,$Y,$X"
}

# 8. Selection files (`A[SEL]`, slices by name) against zarr-python's a[sel], cold. Each kind
# aligned on the 8x256x256 chunks and not: a pixel series and a column at a chunk's first row
# and column and inside; a frame of the frame-chunked stack and of the 8x256x256 one; the
# sub-block of exactly 8 chunks and one cutting 18; and a band of whole rows, each row crossing
# the 4 chunks of X.
section_slice() {
    local t=$((TS / 2 + 1)) t0=$((T / 4)) ta=8
    [ "$T" -ge 24 ] || ta=0
    cold_pair slice.pixel zstd ":,$((Y / 3)),$((X / 2 + 3))" slice "$T,$Y,$X"
    cold_pair slice.pixel_aligned zstd ":,$((Y / 4)),$((X / 2))" slice "$T,$Y,$X"
    cold_pair slice.column zstd ":,:,$((X / 2 + 3))" slice "$T,$Y,$X"
    cold_pair slice.column_aligned zstd ":,:,$((X / 2))" slice "$T,$Y,$X"
    cold_pair slice.frame stack/by_frame "$t" slice "$TS,$Y,$X"
    cold_pair slice.frame_block stack/by_block "$t" slice "$TS,$Y,$X"
    cold_pair slice.block zstd "$t0:$((t0 + 16)),200:712,300:812" slice "$T,$Y,$X"
    cold_pair slice.block_aligned zstd "$ta:$((ta + 16)),$((Y / 4)):$((3 * Y / 4)),$((X / 4)):$((3 * X / 4))" slice "$T,$Y,$X"
    cold_pair slice.rows zstd "$t0:$((t0 + 8)),300:400,:" slice "$T,$Y,$X"
    # The array read block by block in one mount (one zarr-python process): chunk-aligned
    # sub-blocks of 16 planes and a quarter of each plane (8 whole chunks each), one after
    # another, as a tiled processing loop does.
    local blocks="" tb q y x
    for ((tb = 0; tb == 0 || tb + 16 <= T; tb += 16)); do
        for q in 0 1 2 3; do
            y=$((q / 2 * Y / 2)) x=$((q % 2 * X / 2))
            blocks+="${blocks:+;}$tb:$((tb + 16)),$y:$((y + Y / 2)),$x:$((x + X / 2))"
        done
    done
    cold_pair slice.blocks_series zstd "$blocks" slice "$T,$Y,$X"
}

# 4. Random 4 KiB preads, timed per call by a small C program.
PREAD_C='
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* bench_pread FILE WORKING_SET_BYTES MAX_READS MAX_SECONDS DIRECT(0|1) SEED
   WORKING_SET_BYTES 0: read offset 0 every time and accept short reads (a small file). */
int main(int argc, char **argv) {
    if (argc != 7) { fprintf(stderr, "usage: bench_pread FILE WS MAXREADS MAXSECS DIRECT SEED\n"); return 2; }
    long long ws = atoll(argv[2]);
    long maxn = atol(argv[3]);
    double maxs = atof(argv[4]);
    int direct = atoi(argv[5]);
    uint64_t s = strtoull(argv[6], 0, 10) * 0x9E3779B97F4A7C15ull + 1;
    int fd = open(argv[1], O_RDONLY | (direct ? O_DIRECT : 0));
    if (fd < 0) { fprintf(stderr, "open %s: %s\n", argv[1], strerror(errno)); return 1; }
    void *buf;
    if (posix_memalign(&buf, 4096, 4096)) return 1;
    long long pages = ws / 4096;
    double *lat = malloc(sizeof(double) * maxn);
    if (!lat || (ws != 0 && pages < 1)) return 1;
    double t0 = now(), b = t0;
    long i;
    for (i = 0; i < maxn; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        off_t off = ws ? (off_t)(s % (uint64_t)pages) * 4096 : 0;
        double a = now();
        ssize_t k = pread(fd, buf, 4096, off);
        b = now();
        if (ws ? k != 4096 : k <= 0) { fprintf(stderr, "pread at %lld: %zd (%s)\n", (long long)off, k, strerror(errno)); return 1; }
        lat[i] = b - a;
        if (b - t0 > maxs) { i++; break; }
    }
    double el = b - t0;
    qsort(lat, i, sizeof(double), cmp);
    double sum = 0;
    for (long j = 0; j < i; j++) sum += lat[j];
    printf("{\"reads\": %ld, \"seconds\": %.6f, \"iops\": %.1f, \"p50_us\": %.2f, \"p99_us\": %.2f, \"mean_us\": %.2f}\n",
           i, el, i / el, lat[i / 2] * 1e6, lat[(long)(i * 0.99)] * 1e6, sum / i * 1e6);
    return 0;
}
'
PREAD=$BENCH_DIR/bin/bench_pread
build_pread() {
    mkdir -p "$BENCH_DIR/bin"
    if [ ! -x "$PREAD" ] || [ "$(cat "$PREAD.c" 2>/dev/null)" != "$PREAD_C" ]; then
        printf '%s' "$PREAD_C" > "$PREAD.c"
        cc -O2 -o "$PREAD" "$PREAD.c"
    fi
}
rand_run() { # KEY FILE DIRECT SEED [WORKING_SET_BYTES]
    local j
    j=$(timeout -k 5 "$TMO" "$PREAD" "$2" "${5:-$BYTES}" "$RAND_MAX" "$RAND_SECS" "$3" "$4")
    rec "$1" "$j"
    log "$1: $j"
}

section_random() {
    local r small=$((BYTES / 8))
    build_pread
    mount_fs "$STORE" --cache-size $(( BYTES < 768 << 20 ? 1 << 30 : 2 * BYTES ))
    # Fill the chunk cache: an O_DIRECT reader keeps what it reads there (a page-cached
    # sequential reader would leave it to the page cache, see README "How it works").
    dd if="$MNT/zstd" of=/dev/null bs=1M iflag=direct status=none
    for r in $(seq "$REPS"); do rand_run rand.incache "$MNT/zstd" 1 "$r"; done
    # The FUSE round trip alone: O_DIRECT reads of a small metadata file (no chunk work).
    for r in $(seq "$REPS"); do rand_run rand.floor "$MNT/zstd.json" 1 "$r" 0; done
    drop_caches
    rand_run rand.buffered "$MNT/zstd" 0 7
    unmount_fs
    mount_fs "$STORE" --cache-size "$small"
    for r in $(seq "$REPS"); do rand_run rand.outcache "$MNT/zstd" 1 "$r"; done
    unmount_fs
    warm "$RAW"
    for r in $(seq "$REPS"); do rand_run rand.pagecache "$RAW" 0 "$r"; done
}

# 5. Four parallel readers.
section_parallel() {
    local r q t0 qm=$((BYTES / 4 / 1048576)) qt=$((T / 4)) pids jobs
    [ "$qt" -ge 1 ] || qt=1
    for r in $(seq "$REPS"); do
        cold_prep "$STORE/zstd"
        mount_fs "$STORE"
        for state in cold warm; do
            pids=()
            t0=$EPOCHREALTIME
            for q in 0 1 2 3; do
                dd_secs "$MNT/zstd" $((q * qm)) "$qm" > /dev/null & pids+=($!)
            done
            for q in "${pids[@]}"; do wait "$q"; done
            rec "par.$state.zarrfs" "$(since "$t0")"
        done
        unmount_fs
        rm -rf "$RUN/barrier"; mkdir -p "$RUN/barrier"
        pids=()
        for q in 0 1 2 3; do
            local lo=$(( q * T / 4 )) hi=$(( (q + 1) * T / 4 ))
            py "$SCRIPTS/bench_read.py" zarr "$STORE/zstd" "$lo:$hi" --warmup "$STORE/zstd" \
                --barrier "$RUN/barrier" > "$RUN/barrier/out.$q" & pids+=($!)
        done
        for q in $(seq 6000); do
            [ "$(find "$RUN/barrier" -name 'ready.*' | wc -l)" -ge 4 ] && break
            sleep 0.02
        done
        touch "$RUN/barrier/go"
        for q in "${pids[@]}"; do wait "$q"; done
        rec par.zarr "$(py "$SCRIPTS/bench_read.py" aggregate "$RUN"/barrier/out.? | jget seconds)"
        log "parallel rep $r: $(grep -P '^par\.' "$RESULTS" | tail -n3 | tr '\t\n' '= ')"
    done
    warm "$RAW"
    for r in $(seq "$REPS"); do
        pids=()
        t0=$EPOCHREALTIME
        for q in 0 1 2 3; do dd_secs "$RAW" $((q * qm)) "$qm" > /dev/null & pids+=($!); done
        for q in "${pids[@]}"; do wait "$q"; done
        rec par.raw "$(since "$t0")"
    done
}

# 6. Metadata over the 10k-node hierarchy.
timed() { # KEY CMD...; output to /dev/null
    local key=$1 t0
    shift
    t0=$EPOCHREALTIME
    timeout -k 5 "$TMO" "$@" > /dev/null
    rec "$key" "$(since "$t0")"
}

section_meta() {
    local r t0
    warm "$TSTORE"
    find "$TSTORE" > /dev/null; ls -lR "$TSTORE" > /dev/null
    rec meta.store_entries "$(find "$TSTORE" | wc -l)"
    for r in $(seq "$REPS"); do
        t0=$EPOCHREALTIME
        mount_fs "$TSTORE"
        rec meta.mount "$(since "$t0")"
        timed meta.find.fresh find "$MNT"
        timed meta.find.warm find "$MNT"
        if [ "$r" = 1 ]; then rec meta.mount_entries "$(find "$MNT" | wc -l)"; fi
        unmount_fs
        mount_fs "$TSTORE"
        timed meta.lslr.fresh ls -lR "$MNT"
        timed meta.lslr.warm ls -lR "$MNT"
        unmount_fs
        timed meta.find.store find "$TSTORE"
        timed meta.lslr.store ls -lR "$TSTORE"
        rec meta.zarr_list "$(py "$SCRIPTS/bench_read.py" list "$TSTORE" | jget seconds)"
    done
    log "meta: $(grep -P '^meta\.' "$RESULTS" | tr '\t\n' '= ')"
}

# Metadata at scale: metadata-only trees of G groups x 100 arrays (10,000 and 100,000 arrays in a
# full run). Mount time against reading every metadata file once, the daemon's peak RSS after a
# full `find` (MiB and per node), and `find` / `ls -lR` against the same walks of the store.
section_scale() {
    local g tree store nodes t0 hwm
    for g in $SCALE_GROUPS; do
        tree=$BENCH_DIR/meta-tree-${g}x100
        py "$SCRIPTS/bench_data.py" meta-tree "$tree" --groups "$g" --arrays 100
        store=$tree/tree.zarr
        nodes=$((1 + g + g * 100))
        rec "scale.$nodes.nodes" "$nodes"
        warm "$store"
        find "$store" -name zarr.json -exec cat {} + > /dev/null
        timed "scale.$nodes.read_all" find "$store" -name zarr.json -exec cat {} +
        timed "scale.$nodes.find.store" find "$store"
        timed "scale.$nodes.lslr.store" ls -lR "$store"
        t0=$EPOCHREALTIME
        mount_fg "$store"
        rec "scale.$nodes.mount" "$(since "$t0")"
        timed "scale.$nodes.find" find "$MNT"
        hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$FG_PID/status")
        rec "scale.$nodes.hwm_kib" "$hwm"
        timed "scale.$nodes.lslr" ls -lR "$MNT"
        log "scale $nodes nodes: VmHWM $((hwm / 1024)) MiB after find"
        unmount_fs
        wait "$FG_PID" || true
    done
    scale_s3 "${SCALE_GROUPS%% *}"
}

# The smallest scale tree over S3 without consolidated metadata (loopback s3s-fs): the time from
# starting the mount command to the first answered `ls` of the root, and to the end of a full
# `find`, with the store's requests counted at each point (.zarrfs/stats).
# Requests the store of the mount on $MNT has made so far.
store_requests() {
    "$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["store"]["requests"])' "$MNT/.zarrfs/stats"
}

scale_s3() { # GROUPS
    local g=$1 root=$BENCH_DIR/s3scale nodes t0 r
    nodes=$((1 + g + g * 100))
    rm -rf "$root"
    mkdir -p "$root/bench"
    link_tree "$BENCH_DIR/meta-tree-${g}x100/tree.zarr" "$root/bench/tree.zarr"
    start_s3 "$root"
    for r in $(seq "$REPS"); do
        t0=$EPOCHREALTIME
        mount_fs s3://bench/tree.zarr --endpoint "$S3_EP"
        timeout -k 5 "$TMO" ls "$MNT" > /dev/null
        rec "scale.s3.$nodes.first_ls" "$(since "$t0")"
        rec "scale.s3.$nodes.first_ls.requests" "$(store_requests)"
        timeout -k 5 "$TMO" find "$MNT" > /dev/null
        rec "scale.s3.$nodes.find" "$(since "$t0")"
        rec "scale.s3.$nodes.find.requests" "$(store_requests)"
        unmount_fs
    done
    log "scale over S3, $nodes nodes: $(grep -P '^scale\.s3\.' "$RESULTS" | tail -n4 | tr '\t\n' '= ')"
    stop_s3
}

# Peak RSS of the daemon against --cache-size, reading more than the cache holds.
RSS_CACHE_MIB=$(( SIZE_MIB >= 256 ? 256 : SIZE_MIB / 2 ))
[ "$RSS_CACHE_MIB" -ge 8 ] || RSS_CACHE_MIB=8
section_rss() {
    local a pids=() hwm
    mount_fg "$STORE" --cache-size "${RSS_CACHE_MIB}M"
    for a in zstd blosc gzip stack/by_frame stack/by_block; do
        dd_secs "$MNT/$a" > /dev/null & pids+=($!)
    done
    for a in "${pids[@]}"; do wait "$a"; done
    build_pread
    timeout -k 5 "$TMO" "$PREAD" "$MNT/zstd" "$BYTES" 100000 1 1 99 > /dev/null
    hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$FG_PID/status")
    rec rss.hwm_kib "$hwm"
    rec rss.rss_end_kib "$(awk '/^VmRSS/ { print $2 }' "/proc/$FG_PID/status")"
    rec rss.cache_bytes $((RSS_CACHE_MIB * 1048576))
    log "rss: VmHWM $((hwm / 1024)) MiB with --cache-size ${RSS_CACHE_MIB}M"
    local mnt=$MNT rc=0
    unmount_fs
    if [ -n "$(daemons_of "$mnt")" ]; then
        rec check.rss_exit "\"zarrfs -f still running 30 s after unmount\""
        kill "$FG_PID"
    fi
    wait "$FG_PID" || rc=$?
    if [ "$rc" = 0 ]; then rec check.rss_exit ok
    else rec check.rss_exit "\"zarrfs -f exited with status $rc after unmount\""; fi
}

# 7. Remote: the zstd array and the tree served by a loopback S3 server (s3s-fs, one bucket per
# directory of its root, objects are plain files: hard links to the local stores), and the same
# volume as one shard, put to the server as objects.
S3_KEY=zarrfs-bench
S3_SECRET=zarrfs-bench-secret
free_port() { "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
link_tree() { cp -al "$1" "$2" 2>/dev/null || cp -r "$1" "$2"; }
# Requests the last remote mount made while loading, from its -v log line (the mount command's
# stderr, before the daemon detaches).
mount_requests() { sed -n 's/.*: scanned in .*: \([0-9]*\) requests.*/\1/p' "$RUN/mount-v.log" | tail -n1; }

# Latencies (ms) the delay proxy adds for the remote read rows; 0 goes straight to s3s-fs.
REMOTE_DELAYS="0 100 200"
# A command prefix for the S3 server and the delay proxy (empty: they share every core).
SERVER_PIN=()

# Starts scripts/delay_proxy.py in front of the S3 server on port $1, holding every response
# $2 ms; sets PROXY_PORT and PROXY_PID.
start_proxy() {
    local r
    PROXY_PORT=$(free_port)
    "${SERVER_PIN[@]}" "$PYTHON" "$SCRIPTS/delay_proxy.py" --listen "$PROXY_PORT" --to "127.0.0.1:$1" --delay-ms "$2" \
        >>"$RUN/delay-proxy.log" 2>&1 &
    PROXY_PID=$!
    echo "$PROXY_PID" >> "$RUN/pids"
    for r in $(seq 500); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PROXY_PORT") 2>/dev/null && return 0
        sleep 0.02
    done
    die "the delay proxy did not start (log: $RUN/delay-proxy.log)"
}

stop_proxy() {
    kill "$PROXY_PID" 2>/dev/null || true
    wait "$PROXY_PID" 2>/dev/null || true
}

# The plain 64-in-flight fetch of the zstd chunk objects at endpoint $1 (JSON). obstore has been
# seen to abort (exit 134, glibc's message on stderr) now and then behind the delay proxy: such a
# run is logged and repeated, up to three tries.
# With $2 = --decode zstd, each object is decoded as it arrives (no FUSE); $3 names other chunk
# objects (default the zstd array's).
plain_fetch() {
    local prefix=${3:-s3://bench/arrays.zarr/zstd/c/} try
    for try in 1 2 3; do
        LIBC_FATAL_STDERR_=1 py "$SCRIPTS/bench_read.py" fetch "$prefix" --endpoint "$1" --in-flight 64 ${2:-} \
            && return 0
        log "plain fetch of $prefix at $1 failed (try $try of 3)"
    done
    return 1
}

# One untimed read of the zstd array through a newly started server or proxy at endpoint $1:
# their first connections and requests are slower, which would otherwise fall on whichever
# reader comes first.
warm_server() {
    mount_fs "s3://bench/arrays.zarr" --endpoint "$1"
    dd_secs "$MNT/zstd" > /dev/null
    unmount_fs
}

# zarrfs's cold dd of array $5 of s3://bench/$4 at endpoint $1, recorded as $2.cold and left in
# COLD; $3 = 1 checks its bytes against raw.bin.
remote_cold_dd() {
    local ep=$1 key=$2 check=$3 store=$4 array=$5
    cold_prep "$BENCH_DIR/s3root/bench/$store/$array"
    mount_fs "s3://bench/$store" --endpoint "$ep"
    local t0
    t0=$(machine_ticks)
    COLD=$(dd_secs "$MNT/$array"); rec "$key.cold" "$COLD"
    rec "$key.cold_busy" "$(busy_cores "$t0" "$(machine_ticks)")"
    if [ "$check" = 1 ]; then
        if cmp -s "$MNT/$array" "$RAW"; then rec "check.$key" ok
        else rec "check.$key" "\"MISMATCH: $array over S3 differs from raw.bin\""; fi
    fi
    unmount_fs
}

# One repetition of the remote read rows at endpoint $1, recorded under $2 (e.g.
# remote.d100.zstd): zarrfs's cold dd, zarr-python + obstore with its default settings and with
# 64 requests in flight, and a plain fetch of the same chunk objects, 64 in flight, without and
# with decoding. $3 = 1 checks zarrfs's bytes.
remote_read_rows() {
    local ep=$1 key=$2 check=$3 s s64 f fd j
    remote_cold_dd "$ep" "$key" "$check" arrays.zarr zstd
    s=$(py "$SCRIPTS/bench_read.py" zarr s3://bench/arrays.zarr/zstd : --warmup s3://bench/arrays.zarr/zstd \
        --endpoint "$ep" | jget seconds)
    rec "$key.zarr" "$s"
    s64=$(py "$SCRIPTS/bench_read.py" zarr s3://bench/arrays.zarr/zstd : --warmup s3://bench/arrays.zarr/zstd \
        --endpoint "$ep" --concurrency 64 | jget seconds)
    rec "$key.zarr64" "$s64"
    j=$(plain_fetch "$ep")
    f=$(jget seconds <<<"$j")
    rec "$key.fetch64" "$f"
    rec "$key.fetch64_busy" "$(jget busy_cores <<<"$j")"
    cold_prep "$BENCH_DIR/s3root/bench/arrays.zarr/zstd"
    fd=$(plain_fetch "$ep" "--decode zstd" | jget seconds)
    rec "$key.fetchdec64" "$fd"
    log "$key: zarrfs cold $COLD s; zarr-python + obstore $s s (64 in flight: $s64 s); plain fetch $f s (decoding: $fd s)"
    # The same volume stored as one shard: its inner chunks read by byte ranges, against
    # zarr-python + obstore reading the same.
    key=${key%.zstd}.shard
    remote_cold_dd "$ep" "$key" "$check" sharded.zarr one
    s=$(py "$SCRIPTS/bench_read.py" zarr s3://bench/sharded.zarr/one : --warmup s3://bench/sharded.zarr/one \
        --endpoint "$ep" | jget seconds)
    rec "$key.zarr" "$s"
    log "$key: zarrfs cold $COLD s; zarr-python + obstore $s s"
    # The same volume stored uncompressed: how far zarrfs hides the latency when nothing is
    # left to decode, against the plain fetch of those objects.
    key=${key%.shard}.plain
    remote_cold_dd "$ep" "$key" "$check" plain.zarr plain
    cold_prep "$BENCH_DIR/s3root/bench/plain.zarr/plain"
    f=$(plain_fetch "$ep" "" s3://bench/plain.zarr/plain/c/ | jget seconds)
    rec "$key.fetch64" "$f"
    log "$key: zarrfs cold $COLD s; plain fetch $f s"
}

start_s3() { # ROOT: serves ROOT (one bucket per directory) with s3s-fs; sets S3_EP and S3_PID
    local port r
    command -v s3s-fs >/dev/null || die "s3s-fs is missing: cargo install s3s-fs --version 0.14.1 --features binary"
    port=$(free_port)
    "${SERVER_PIN[@]}" s3s-fs --host 127.0.0.1 --port "$port" --access-key "$S3_KEY" --secret-key "$S3_SECRET" "$1" \
        >"$RUN/s3s-fs.log" 2>&1 &
    S3_PID=$!
    echo "$S3_PID" >> "$RUN/pids"
    S3_EP=http://127.0.0.1:$port
    for r in $(seq 500); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
        sleep 0.02
    done
    export AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET AWS_REGION=us-east-1
}

stop_s3() {
    kill "$S3_PID" 2>/dev/null || true
    wait "$S3_PID" 2>/dev/null || true
}

# The latency rows again with the S3 server and the delay proxy on the last core this run may use
# and every reader (zarrfs, dd, zarr-python, the plain fetch) on the others: a server elsewhere,
# as object storage is, instead of one competing with the decoding readers for their cores. The
# section runs in a subshell ($BASHPID), whose children inherit its affinity. Needs two cores.
remote_apart() {
    local root=$1 allowed cpus last delay r key ep s f
    allowed=$(taskset -pc "$BASHPID" | sed 's/.*: //')
    cpus=$("$PYTHON" -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')
    read -ra cpus <<<"$cpus"
    [ "${#cpus[@]}" -ge 2 ] || { log "remote, server apart: skipped (one core)"; return 0; }
    last=${cpus[-1]}
    SERVER_PIN=(taskset -c "$last")
    start_s3 "$root"
    taskset -pc "$(IFS=,; echo "${cpus[*]:0:${#cpus[@]}-1}")" "$BASHPID" > /dev/null
    for delay in $REMOTE_DELAYS; do
        [ "$delay" = 0 ] && continue
        key=remote.apart.d$delay.zstd
        start_proxy "${S3_EP##*:}" "$delay"
        ep=http://127.0.0.1:$PROXY_PORT
        warm_server "$ep"
        for r in $(seq "$REPS"); do
            remote_cold_dd "$ep" "$key" "$([ "$r" = 1 ] && echo 1)" arrays.zarr zstd
            s=$(py "$SCRIPTS/bench_read.py" zarr s3://bench/arrays.zarr/zstd : \
                --warmup s3://bench/arrays.zarr/zstd --endpoint "$ep" | jget seconds)
            rec "$key.zarr" "$s"
            f=$(plain_fetch "$ep" | jget seconds)
            rec "$key.fetch64" "$f"
            log "$key (server on CPU $last, readers on the others): zarrfs cold $COLD s; zarr-python + obstore $s s; plain fetch $f s"
        done
        stop_proxy
    done
    taskset -pc "$allowed" "$BASHPID" > /dev/null
    stop_s3
    SERVER_PIN=()
}

section_remote() {
    local root=$BENCH_DIR/s3root ep r t0 kind store delay key
    "$PYTHON" -c 'import obstore' 2>/dev/null || die "$PYTHON needs obstore (pip install obstore)"
    rm -rf "$root"
    mkdir -p "$root/bench/arrays.zarr"
    cp "$STORE/zarr.json" "$root/bench/arrays.zarr/"
    link_tree "$STORE/zstd" "$root/bench/arrays.zarr/zstd"
    py "$SCRIPTS/bench_data.py" plain "$BENCH_DIR/plain-${SIZE_MIB}M" --raw "$RAW" --shape "$T,$Y,$X"
    link_tree "$BENCH_DIR/plain-${SIZE_MIB}M/plain.zarr" "$root/bench/plain.zarr"
    link_tree "$TSTORE" "$root/bench/tree.zarr"
    cp -r "$TSTORE" "$root/bench/tree-consolidated.zarr"
    py "$SCRIPTS/bench_data.py" consolidate "$root/bench/tree-consolidated.zarr"
    py "$SCRIPTS/bench_data.py" shard "$BENCH_DIR/shard-${SIZE_MIB}M" --raw "$RAW" --shape "$T,$Y,$X"
    start_s3 "$root"
    py "$SCRIPTS/bench_data.py" upload "$BENCH_DIR/shard-${SIZE_MIB}M/sharded.zarr" s3://bench/sharded.zarr \
        --endpoint "$S3_EP"
    ep=$S3_EP
    for delay in $REMOTE_DELAYS; do
        if [ "$delay" = 0 ]; then key=remote.full.zstd; else key=remote.d$delay.zstd; fi
        [ "$delay" = 0 ] || start_proxy "${S3_EP##*:}" "$delay"
        if [ "$delay" = 0 ]; then warm_server "$ep"; else warm_server "http://127.0.0.1:$PROXY_PORT"; fi
        for r in $(seq "$REPS"); do
            if [ "$delay" = 0 ]; then
                remote_read_rows "$ep" "$key" "$([ "$r" = 1 ] && echo 1)"
            else
                remote_read_rows "http://127.0.0.1:$PROXY_PORT" "$key" "$([ "$r" = 1 ] && echo 1)"
            fi
        done
        [ "$delay" = 0 ] || stop_proxy
    done
    for r in $(seq "$REPS"); do
        for kind in consolidated listed; do
            # Without consolidated metadata the walk makes a request per node (32 in flight): once.
            [ "$kind" = listed ] && [ "$r" != 1 ] && continue
            if [ "$kind" = listed ]; then store=s3://bench/tree.zarr; else store=s3://bench/tree-consolidated.zarr; fi
            new_mnt
            t0=$EPOCHREALTIME
            timeout -k 5 "$TMO" "$ZARRFS_BIN" -v --endpoint "$ep" --log-file "$RUN/zarrfs.log" \
                "$store" "$MNT" 2>>"$RUN/mount-v.log" \
                || die "mounting $store failed (log: $RUN/mount-v.log)"
            rec "remote.mount.$kind" "$(since "$t0")"
            timed "remote.ls.$kind" ls "$MNT"
            timed "remote.find.$kind" find "$MNT"
            if [ "$r" = 1 ]; then
                rec "remote.mount.$kind.requests" "$(mount_requests)"
                rec "remote.mount.$kind.entries" "$(find "$MNT" | wc -l)"
            fi
            unmount_fs
        done
        log "remote mount rep $r: $(grep -P '^remote\.mount\.(listed|consolidated)\t' "$RESULTS" | tail -n2 | tr '\t\n' '= ')"
    done
    stop_s3
    remote_apart "$root"
}

# 8. Decode once (--cache-dir): reads served from backing files, and the machine's limit for a
# cold read: decoding the same chunks on all cores with no FUSE, plus moving the same bytes
# through FUSE with nothing to decode (an uncompressed copy of the array).
section_backing() {
    local codec r i cache=$RUN/cache-dir plain=$BENCH_DIR/plain-${SIZE_MIB}M off first warm again
    py "$SCRIPTS/bench_data.py" plain "$plain" --raw "$RAW" --shape "$T,$Y,$X"
    for codec in zstd blosc gzip; do
        for r in $(seq "$REPS"); do
            cold_prep "$STORE/$codec"
            mount_fs "$STORE"
            off=$(dd_secs "$MNT/$codec"); rec "backing.$codec.first_off" "$off"
            unmount_fs
            rm -rf "$cache"
            cold_prep "$STORE/$codec"
            mount_fs "$STORE" -v --cache-dir="$cache" --cache-dir-size 8G 2>>"$RUN/backing-v.log"
            first=$(dd_secs "$MNT/$codec"); rec "backing.$codec.first_on" "$first"
            # The complete file is synced and published in the background: wait for it.
            for i in $(seq 3000); do compgen -G "$cache/*.data" >/dev/null && break; sleep 0.01; done
            # FUSE sends the first reader's release asynchronously; until the daemon has it, a new
            # open is not answered with passthrough (one mode per file at a time).
            sleep 0.2
            warm=$(dd_secs "$MNT/$codec"); rec "backing.$codec.warm" "$warm"
            unmount_fs
            mount_fs "$STORE" -v --cache-dir="$cache" --cache-dir-size 8G 2>>"$RUN/backing-v.log"
            again=$(dd_secs "$MNT/$codec"); rec "backing.$codec.remount" "$again"
            if [ "$r" = 1 ]; then
                if cmp -s "$MNT/$codec" "$RAW"; then rec "check.backing.$codec" ok
                else rec "check.backing.$codec" "\"MISMATCH: $codec from the cache dir differs from raw.bin\""; fi
            fi
            unmount_fs
            rec "limit.$codec.decode" "$(py "$SCRIPTS/bench_read.py" decode "$STORE/$codec" --threads "$CORES" | jget seconds)"
            log "backing $codec rep $r: first read off $off s, on $first s; warm $warm s; remount $again s"
        done
    done
    rec backing.passthrough_opens "$(grep -c 'opened with passthrough' "$RUN/zarrfs.log" || true)"
    # The mode is logged while mounting, on the mount command's stderr.
    rec backing.mode "\"$(grep -o 'complete arrays are [a-zA-Z ]*' "$RUN/backing-v.log" | tail -n1)\""
    for r in $(seq "$REPS"); do
        cold_prep "$plain/plain.zarr/plain"
        mount_fs "$plain/plain.zarr"
        rec limit.move "$(dd_secs "$MNT/plain")"
        unmount_fs
    done
    warm "$RAW"
    for r in $(seq "$REPS"); do rec backing.raw.pagecache "$(dd_secs "$RAW")"; done
}

# 10. Icechunk repositories and kerchunk references: a netCDF-4 file read through kerchunk JSON
# references, and the same values as an Icechunk array, cold, against zarr-python reading the
# same references (fsspec) and the same repository (icechunk). REFS_PYTHON needs Python >= 3.12
# with zarr 3, icechunk 2, kerchunk, h5py, netCDF4 and fsspec.
section_refs() {
    local dir=$BENCH_DIR/refs-${SIZE_MIB}M r z s kind store files
    "$REFS_PYTHON" -c 'import zarr, icechunk, kerchunk, h5py, netCDF4, fsspec' 2>/dev/null \
        || die "REFS_PYTHON ($REFS_PYTHON) needs zarr 3, icechunk, kerchunk, h5py, netCDF4 and fsspec"
    timeout -k 5 "$TMO" "$REFS_PYTHON" "$SCRIPTS/bench_refs.py" data "$dir" --size-mib "$SIZE_MIB"
    rec bytes.refs "$(stat -c %s "$dir/raw.bin")"
    for r in $(seq "$REPS"); do
        for kind in kerchunk icechunk; do
            if [ "$kind" = kerchunk ]; then store=$dir/refs.json; files=$dir/data.nc
            else store=$dir/repo; files=$dir/repo; fi
            cold_prep "$files" "$store"
            mount_fs "$store"
            z=$(dd_secs "$MNT/t"); rec "refs.$kind.zarrfs" "$z"
            if [ "$r" = 1 ]; then
                if cmp -s "$MNT/t" "$dir/raw.bin"; then rec "check.refs.$kind" ok
                else rec "check.refs.$kind" "\"MISMATCH: $kind t differs from raw.bin\""; fi
            fi
            unmount_fs
            cold_prep "$files" "$store"
            if [ "$kind" = kerchunk ]; then
                s=$(timeout -k 5 "$TMO" "$REFS_PYTHON" "$SCRIPTS/bench_refs.py" read-refs "$store" t 2>/dev/null | jget seconds)
            else
                s=$(timeout -k 5 "$TMO" "$REFS_PYTHON" "$SCRIPTS/bench_refs.py" read-icechunk "$store" t 2>/dev/null | jget seconds)
            fi
            rec "refs.$kind.zarr" "$s"
            log "refs $kind rep $r: zarrfs cold $z s; zarr-python $s s"
        done
    done
}

# ---------------------------------------------------------------------------------------------
STARTED=$EPOCHREALTIME
log "zarrfs $ZARRFS_BIN; ${SIZE_MIB} MiB per array (${T}x${Y}x${X} float32); $REPS repetitions"
section full
section frame
section column
section slice
section random
section parallel
section meta
section scale
section rss
section remote
section backing
section refs
log "measured in $(since "$STARTED") s"

py "$SCRIPTS/bench_report.py" "$RESULTS" --out "$OUTPUT" --repo "$REPO" \
    --param "quick=$QUICK" --param "reps=$REPS" --param "binary=$ZARRFS_BIN" \
    --param "binary_given=$BIN_GIVEN" --param "commit=${ZARRFS_COMMIT:-}" \
    --param "shape=($T, $Y, $X) float32 = $((BYTES / 1048576)) MiB per array" \
    --param "stack_frames=$TS" --param "sizes=$SIZES" \
    --param "tree=$TREE_GROUPS groups × $TREE_ARRAYS arrays (shape (32,), chunks (16,), int32, Zarr v3) under one root = $((1 + TREE_GROUPS + TREE_GROUPS * TREE_ARRAYS)) nodes" \
    --param "tree_nodes=$((1 + TREE_GROUPS + TREE_GROUPS * TREE_ARRAYS))" \
    --param "rss_cache=${RSS_CACHE_MIB}M" \
    --param "rss_read_mib=$(( (3 * BYTES + 2 * TS * FRAME_BYTES) / 1048576 ))"
