#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real programs from Debian packages, as run by the malloc replacement's
# tests (run_programs.sh) and benchmark (tools/bench_programs.py).
#
#   programs.sh prepare DIR        write the inputs into DIR (once)
#   programs.sh run PROGRAM DIR    run one program on them; its stdout is what
#                                  must not depend on the allocator
#   programs.sh list               the program names (list-all: with the
#                                  benchmark-only ones)
#
# Programs: python (a non-trivial script; Python's own small-object
# allocator takes objects up to 512 bytes from 256 KiB arenas, everything
# larger goes to malloc; PYTHONMALLOC=malloc would send every object there,
# which the sequential fits cannot serve in reasonable time; python-malloc,
# benchmark only, does exactly that, to compare the malloc replacements on
# every object), sqlite (a 100,000-row database built and
# queried), git (init, add and commit 300 files at fixed dates and names),
# gcc (compile two of heapkit's sources and a generated file at -O2; object bytes
# are hashed, and the linked program's output is printed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
PROGRAMS="python sqlite git gcc"
BENCH_ONLY="python-malloc"

die() { echo "programs.sh: $*" >&2; exit 2; }

prepare() {
  local d=$1
  mkdir -p "$d/git-tree" "$d/gcc"
  cp "$here/programs/workload.py" "$d/workload.py"
  cat > "$d/sqlite.sql" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
INSERT INTO t SELECT i, (i * 7919) % 1000, printf('name-%08d-%s', (i * 104729) % 1000003, hex(i)),
                     (i % 977) * 1.25 FROM n;
CREATE INDEX t_grp ON t(grp);
CREATE INDEX t_name ON t(name);
SELECT count(*), sum(grp), round(sum(val), 2) FROM t;
SELECT grp, count(*), round(avg(val), 4), min(name), max(name) FROM t GROUP BY grp ORDER BY grp LIMIT 12;
SELECT name FROM t WHERE name LIKE 'name-0000%' ORDER BY name LIMIT 10;
SELECT a.grp, count(*) FROM t a JOIN t b ON a.id = b.id + 1 AND a.grp = b.grp GROUP BY a.grp ORDER BY 2 DESC, 1 LIMIT 5;
UPDATE t SET val = val * 2 WHERE grp < 100;
DELETE FROM t WHERE id % 3 = 0;
SELECT count(*), round(sum(val), 2) FROM t;
SELECT group_concat(name, ',') FROM (SELECT name FROM t ORDER BY val DESC, id LIMIT 20);
SQL
  local i
  for i in $(seq 1 300); do
    mkdir -p "$d/git-tree/dir$((i % 17))"
    { echo "file $i"; seq "$i" $((i * 3)); } > "$d/git-tree/dir$((i % 17))/f$i.txt"
  done
  cp "$root"/src/*.c "$root"/src/*.h "$d/gcc/"
  cp -r "$root/include" "$d/gcc/include"
  {
    echo '#include <stdio.h>'
    for i in $(seq 0 199); do
      echo "static unsigned long f$i(unsigned long x) { unsigned long r = x; for (int k = 0; k < $((i % 13 + 1)); k++) r = r * 6364136223846793005ul + $i; return r ^ (r >> $((i % 31 + 1))); }"
    done
    echo 'int main(void) { unsigned long s = 1;'
    for i in $(seq 0 199); do echo "  s = f$i(s);"; done
    echo '  printf("%lu\n", s); return 0; }'
  } > "$d/gcc/generated.c"
}

run_python() { PYTHONHASHSEED=0 /usr/bin/python3 "$1/workload.py"; }
run_python_malloc() { PYTHONMALLOC=malloc run_python "$1"; }

run_sqlite() {
  rm -f "$1/test.db"
  sqlite3 "$1/test.db" < "$1/sqlite.sql"
}

run_git() {
  local w=$1/git-tree
  rm -rf "$w/.git"
  export GIT_AUTHOR_NAME=heapkit GIT_AUTHOR_EMAIL=heapkit@example.org \
         GIT_COMMITTER_NAME=heapkit GIT_COMMITTER_EMAIL=heapkit@example.org \
         GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" \
         GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
  git -C "$w" init -q -b main
  git -C "$w" add -A
  git -C "$w" commit -q -m "300 files"
  git -C "$w" rm -q -r dir3
  echo changed >> "$w/dir5/f5.txt"
  git -C "$w" commit -q -a -m "second"
  git -C "$w" checkout -q -- . 2>/dev/null || true
  git -C "$w" log --format='%H %s'
  git -C "$w" ls-tree -r HEAD | sha256sum
  git -C "$w" count-objects
  git -C "$w" reset -q --hard HEAD~1
  git -C "$w" status --porcelain | wc -l
}

run_gcc() {
  local d=$1/gcc f
  for f in tlsf buddy; do
    gcc -std=c99 -O2 -I"$d/include" -c "$d/$f.c" -o "$d/$f.o"
  done
  gcc -O2 -c "$d/generated.c" -o "$d/generated.o"
  gcc "$d/generated.o" -o "$d/generated"
  (cd "$d" && sha256sum tlsf.o buddy.o generated.o)
  "$d/generated"
}

case "${1:-}" in
  list) echo "$PROGRAMS" ;;
  list-all) echo "$PROGRAMS $BENCH_ONLY" ;;
  prepare) [ $# -eq 2 ] || die "usage: programs.sh prepare DIR"; prepare "$2" ;;
  run)
    [ $# -eq 3 ] || die "usage: programs.sh run PROGRAM DIR"
    case " $PROGRAMS $BENCH_ONLY " in *" $2 "*) ;; *) die "$2: unknown program (one of: $PROGRAMS $BENCH_ONLY)" ;; esac
    [ -f "$3/workload.py" ] || die "$3: not prepared (run: programs.sh prepare $3)"
    "run_${2//-/_}" "$3" ;;
  *) die "usage: programs.sh prepare DIR | run PROGRAM DIR | list | list-all" ;;
esac
