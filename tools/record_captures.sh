#!/bin/bash
# SPDX-License-Identifier: MIT
# Records the real packet captures of custom-dmm-network (data/captures/, PROVENANCE.md there):
#
#   sudo tools/record_captures.sh [OUTDIR] [SECONDS]     (default data/captures, at most 40 s each)
#
# Root is needed for the network namespace; run by hand, never by make test. Everything
# happens inside a fresh namespace (ip netns add) that has only its loopback, MTU 1500 as on
# Ethernet, segmentation offloads off so every packet has the size it would have on the wire:
# no address outside it is touched. Real HTTP servers (python3 -m http.server) serve real
# files of this machine (Debian's /usr/share/doc, the venv's matplotlib data) named as a web
# site's; curl clients fetch them. Two captures, each bounded by SECONDS and by MAXPKTS packets:
#
#   http.pcap.xz  HTTP only: several clients downloading pages, scripts, style sheets,
#                 images and documents (url-switch, easyport)
#   mix.pcap.xz    a packet mix for DRR: the same downloads beside bulk transfers of large
#                 files, a syslog-like UDP stream (one datagram per line of real text
#                 files) and pings of the sizes of those lines
#
# tcpdump writes full frames; tools/trim_pcap.py then cuts each to its headers, keeping the
# payload only of packets sent to a server (the requests url-switch parses). pcap keeps each
# packet's wire length, which the applications allocate (lab/netapps/source.c).
set -eu  # not pipefail: the site's listings end in head, which closes its pipe

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
out=${1:-$root/data/captures}
secs=${2:-40}
maxpkts=${MAXPKTS:-50000}   # the paper's DRR and url-switch traces: 50,000 packets
venv_py=${PYTHON:-$root/.venv/bin/python}
[[ -x $venv_py ]] || venv_py=python3

if [[ $(id -u) -ne 0 ]]; then
    echo "record_captures.sh: needs root (ip netns add)" >&2
    exit 2
fi
for tool in ip tcpdump ethtool curl ping python3 xz; do
    command -v "$tool" >/dev/null || { echo "record_captures.sh: $tool is missing (make deps)" >&2; exit 2; }
done

ns=hkcap$$
work=$(mktemp -d /tmp/hkcap.XXXXXX)
cleanup() {
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
inns() { ip netns exec "$ns" "$@"; }

ip netns add "$ns"
inns ip link set lo mtu 1500 up
inns ethtool -K lo tso off gso off gro off >/dev/null

# The site: real files under web-like names (url-switch routes by these patterns).
site=$work/site
mkdir -p "$site"/{static/css,static/js,images,docs,download,api}
mpl=$("$venv_py" -c 'import matplotlib, os; print(os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data"))' 2>/dev/null || true)
n=0
while IFS= read -r f; do
    n=$((n + 1))
    ln -s "$f" "$site/docs/$(echo "${f#/usr/share/doc/}" | tr '/' '-')"
done < <(find /usr/share/doc -type f -size -96k \( -name copyright -o -name '*.txt' -o -name 'README*' \) | sort | head -n 900)
if [[ -n $mpl && -d $mpl ]]; then
    find "$mpl" -type f -name '*.png' -size -64k | sort | head -n 250 | while IFS= read -r f; do
        ln -s "$f" "$site/images/$(basename "$f")"; done
    find "$mpl" -type f \( -name '*.json' -o -name '*.mplstyle' \) | sort | while IFS= read -r f; do
        ln -s "$f" "$site/api/$(basename "$f")"; done
fi
find /usr/share "$(dirname "$(dirname "$mpl")")" -type f \( -name '*.js' -o -name '*.css' \) -size -64k 2>/dev/null | sort |
    while IFS= read -r f; do
        ext=${f##*.}
        ln -sf "$f" "$site/static/$ext/$(echo "$f" | md5sum | cut -c1-8)-$(basename "$f")"; done
find /usr/share/doc -type f -name 'changelog*.gz' -size +64k | sort | head -n 12 | while IFS= read -r f; do
    ln -s "$f" "$site/download/$(echo "${f#/usr/share/doc/}" | tr '/' '-')"; done
(cd "$site" && find . -type l | sed 's|^\.||' | sort) > "$work/urls"
echo "site: $(wc -l < "$work/urls") files"

serve() { # port
    inns python3 -m http.server "$1" --bind 127.0.0.1 --directory "$site" >/dev/null 2>&1 &
}
clients() { # port seconds clients seed: curl fetching the site's files in a shuffled order
    local port=$1 t=$2 k
    for k in $(seq 1 "$3"); do
        shuf --random-source=<(yes "$4$k") "$work/urls" | grep -v '^/download/' |
            awk -v p="$port" '{ q = (NR % 7 == 0) ? "?v=" NR : ""; print "url = \"http://127.0.0.1:" p $0 q "\"" }' \
            > "$work/curl$k.cfg"
        inns timeout "$t" curl -s -o /dev/null --max-time 5 -K "$work/curl$k.cfg" &
    done
}
capture() { # name seconds: tcpdump in the background, its pid in $cap
    inns timeout "$2" tcpdump -i lo -n -s 0 -c "$maxpkts" -U -w "$work/$1.pcap" 2>"$work/$1.tcpdump" &
    cap=$!
    sleep 1
}
finish() { # the capture's end (its timeout bounds it), then its clients' (theirs end sooner)
    wait "$cap" || true
    sleep 2
}

serve 8080
serve 8081
sleep 1

# 1. HTTP alone
capture http "$secs"
clients 8080 $((secs - 2)) 4 http
finish

# 2. the DRR mix
capture mix "$secs"
clients 8081 $((secs - 2)) 3 mix
for f in $(grep '^/download/' "$work/urls" | head -n 4); do
    inns timeout $((secs - 2)) curl -s -o /dev/null --limit-rate 400k "http://127.0.0.1:8081$f" &
done
inns timeout $((secs - 2)) python3 -c 'import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 514))
while True:
    s.recv(2048)' &
inns timeout $((secs - 2)) python3 - "$work/urls" "$site" <<'EOF' &
# syslog-like: one UDP datagram per line of the site's text files, at about 300 lines a second
import socket, sys, time
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for url in open(sys.argv[1]).read().split():
    if not url.startswith("/docs/"):
        continue
    for line in open(sys.argv[2] + url, "rb"):
        line = line.rstrip()
        if line:
            sock.sendto(line[:1400], ("127.0.0.1", 514))
            time.sleep(1 / 300)
EOF
inns timeout $((secs - 2)) bash -c 'for s in $(cat /usr/share/doc/*/copyright 2>/dev/null | awk "{ print length }" | head -n 2000); do ping -c 1 -W 1 -s $((s + 8)) 127.0.0.1 >/dev/null; sleep 0.05; done' &
finish

mkdir -p "$out"
for name in http mix; do
    "$venv_py" "$here/trim_pcap.py" --keep-payload-to 8080,8081 "$work/$name.pcap" "$work/$name.cut.pcap"
    xz -9e -c "$work/$name.cut.pcap" > "$out/$name.pcap.xz"
    echo "$name: $(tail -n 2 "$work/$name.tcpdump" | tr '\n' ' ')-> $out/$name.pcap.xz ($(stat -c %s "$out/$name.pcap.xz") bytes)"
done
