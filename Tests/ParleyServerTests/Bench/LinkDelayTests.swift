import Foundation
import ParleyTestSupport
import Testing

/// `parley bench link-delay`, the netem stand-in of `bench partition`'s lossy-link fault, on a
/// real link: two network namespaces joined by a veth pair, an HTTP server on one side, and on
/// the other iptables dropping 5 % of outgoing packets and queueing the rest to the delayer.
@Suite(.enabled(
    if: getuid() == 0 && TestTools.mayRun("ip") && TestTools.mayRun("iptables") && TestTools.mayRun("python3") && TestTools.mayRun("curl"),
    "needs root, iproute2, iptables, python3 and curl"))
struct LinkDelayTests {
    /// Heavy: one at a time with `bench partition`'s lossy-link test, which checks that no
    /// `bench link-delay` outlives its fault and would find this one's.
    @Test(.heavy) func aDegradedLinkIsLateAndLossyYetDeliversAndHealsWhole() throws {
        let tag = "ld\(String(getpid(), radix: 16))"
        let script = """
            set -u
            a=\(tag)a; b=\(tag)b
            cleanup() { ip netns del $a 2>/dev/null; ip netns del $b 2>/dev/null; kill $server 2>/dev/null; true; }
            server=0; trap cleanup EXIT
            ip netns add $a && ip netns add $b
            ip link add \(tag)x type veth peer name \(tag)y
            ip link set \(tag)x netns $a && ip link set \(tag)y netns $b
            ip -n $a addr add 10.77.0.1/24 dev \(tag)x && ip -n $a link set \(tag)x name eth0 && ip -n $a link set eth0 up
            ip -n $b addr add 10.77.0.2/24 dev \(tag)y && ip -n $b link set \(tag)y up
            mkdir -p /tmp/\(tag) && head -c 50000 /dev/urandom > /tmp/\(tag)/blob
            ip netns exec $b python3 -m http.server 8000 --bind 10.77.0.2 --directory /tmp/\(tag) >/dev/null 2>&1 & server=$!
            for i in $(seq 50); do ip netns exec $a curl -s -o /dev/null http://10.77.0.2:8000/blob && break; sleep 0.1; done
            ip netns exec $a \(ServeProcess.binary.path) bench link-delay --delay-ms 200 & delayer=$!
            sleep 0.5
            ip netns exec $a iptables -A OUTPUT -o eth+ -m statistic --mode random --probability 0.05 -j DROP
            ip netns exec $a iptables -A OUTPUT -o eth+ -j NFQUEUE --queue-num 0 --queue-bypass
            for i in $(seq 12); do
              ip netns exec $a curl -s -o /tmp/\(tag)/got -w 'degraded %{time_total} ' --max-time 60 http://10.77.0.2:8000/blob
              cmp -s /tmp/\(tag)/blob /tmp/\(tag)/got && echo whole || echo broken
            done
            echo "dropped $(ip netns exec $a iptables -L OUTPUT -v -x -n | awk '$3 == "DROP" { print $1 }')"
            ip netns exec $a iptables -F OUTPUT
            kill -TERM $delayer; wait $delayer; echo "delayer exit $?"
            for i in $(seq 5); do
              ip netns exec $a curl -s -o /tmp/\(tag)/got -w 'healed %{time_total} ' --max-time 60 http://10.77.0.2:8000/blob
              cmp -s /tmp/\(tag)/blob /tmp/\(tag)/got && echo whole || echo broken
            done
            rm -rf /tmp/\(tag)
            """
        let (status, output) = try runToEnd(URL(fileURLWithPath: "/bin/sh"), ["-c", script])
        #expect(status == 0, "\(output)")
        let lines = output.split(separator: "\n").map(String.init)
        let degraded = lines.filter { $0.hasPrefix("degraded ") }, healed = lines.filter { $0.hasPrefix("healed ") }
        #expect(degraded.count == 12 && healed.count == 5, "\(output)")
        // Every transfer arrives whole: TCP resends what the link lost, and nothing is reordered into garbage.
        #expect((degraded + healed).allSatisfy { $0.hasSuffix(" whole") }, "\(output)")
        // Each request waits at least one held round trip (a lower bound: a loaded machine only adds to it).
        let times = degraded.compactMap { Double($0.split(separator: " ")[1]) }
        #expect(times.count == 12 && times.allSatisfy { $0 >= 0.2 }, "\(output)")
        // Some 300 packets went out: 5 % of them dropped is far from none.
        let dropped = lines.first { $0.hasPrefix("dropped ") }.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
        #expect(dropped > 0, "\(output)")
        // SIGTERM lets the held packets go and ends the delayer cleanly.
        #expect(lines.contains("delayer exit 0"), "\(output)")
        let (_, namespaces) = try runToEnd(URL(fileURLWithPath: "/usr/sbin/ip"), ["netns", "list"])
        #expect(!namespaces.contains(tag), "\(namespaces)")
    }
}
