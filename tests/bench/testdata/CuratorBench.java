// CuratorBench runs Apache Curator 5.4 LeaderLatch participants in one JVM, each with a
// CuratorFramework (a ZooKeeper session) of its own, for the Go package tests/bench: the
// in-process handoff it compares electd with, and idle participants whose ZooKeeper load it
// counts. Driven over a line protocol on stdin/stdout.
//
// Usage: java -cp <curator classpath>:<classdir> CuratorBench <connectString> <path>
//        <participants> <sessionTimeoutMillis>
//
// It starts the participants one after another (each listed among the participants before
// the next starts, so queue order is start order), then prints READY.
// Commands, one per line; each answer is one line:
//   handoff   close the leading latch and wait until another latch's isLeader() runs:
//             TOOK <nanoseconds from just before close() to isLeader()>
//   retire    close the session of the latch closed by the last handoff: OK
//   refill    start a new participant at the back of the queue and wait until listed: OK
//   (end of stdin or "close") closes everything and exits 0.
// A failure prints ERR <message> and exits 1.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorBench {
    private static final long WAIT_MS = 30000;

    private static final PrintStream OUT =
        new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);

    /** One participant: a session and a latch on it. */
    private static final class Member {
        final String id;
        final CuratorFramework client;
        final LeaderLatch latch;
        final AtomicLong ledAt = new AtomicLong(); // System.nanoTime() of isLeader(), 0 before

        Member(String connect, String path, String id, int sessionMs) {
            this.id = id;
            this.client = CuratorFrameworkFactory.newClient(connect, sessionMs, 10000,
                new ExponentialBackoffRetry(100, 3));
            this.latch = new LeaderLatch(client, path, id);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    ledAt.compareAndSet(0, System.nanoTime());
                    synchronized (CuratorBench.class) {
                        CuratorBench.class.notifyAll();
                    }
                }

                @Override
                public void notLeader() {
                }
            });
        }

        void start() throws Exception {
            client.start();
            if (!client.blockUntilConnected((int) WAIT_MS, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException(id + ": not connected after " + WAIT_MS + " ms");
            }
            latch.start();
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
            while (!listed()) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(id + ": not among the participants after " + WAIT_MS + " ms");
                }
                Thread.sleep(5);
            }
        }

        private boolean listed() throws Exception {
            if (latch.getOurPath() == null) {
                return false;
            }
            for (Participant p : latch.getParticipants()) {
                if (id.equals(p.getId())) {
                    return true;
                }
            }
            return false;
        }
    }

    private final String connect;
    private final String path;
    private final int sessionMs;
    private final List<Member> queue = new ArrayList<>(); // start order = queue order
    private Member retired;                               // closed latch, session still open
    private int started;

    private CuratorBench(String connect, String path, int sessionMs) {
        this.connect = connect;
        this.path = path;
        this.sessionMs = sessionMs;
    }

    private void refill() throws Exception {
        started++;
        Member m = new Member(connect, path, "cur-" + started, sessionMs);
        m.start();
        queue.add(m);
    }

    /** Closes the leader's latch and returns the nanoseconds until another latch leads. */
    private long handoff() throws Exception {
        Member leader = queue.get(0);
        if (!leader.latch.hasLeadership()) {
            throw new IllegalStateException(leader.id + ", first in the queue, does not lead");
        }
        long t0 = System.nanoTime();
        leader.latch.close();
        long deadline = t0 + TimeUnit.MILLISECONDS.toNanos(WAIT_MS);
        synchronized (CuratorBench.class) {
            while (true) {
                for (Member m : queue) {
                    long at = m.ledAt.get();
                    if (m != leader && at != 0) {
                        queue.remove(leader);
                        retired = leader;
                        return at - t0;
                    }
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException("no latch leads " + WAIT_MS + " ms after " + leader.id + " closed");
                }
                CuratorBench.class.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            }
        }
    }

    private void retire() {
        if (retired != null) {
            retired.client.close();
            retired = null;
        }
    }

    private void closeAll() {
        retire();
        for (Member m : queue) {
            try {
                m.latch.close();
            } catch (Exception e) {
                // closing anyway
            }
            m.client.close();
        }
    }

    static void out(String line) {
        OUT.print(line);
        OUT.print('\n');
        OUT.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            out("ERR usage: CuratorBench <connect> <path> <participants> <sessionTimeoutMillis>");
            System.exit(2);
        }
        CuratorBench b = new CuratorBench(args[0], args[1], Integer.parseInt(args[3]));
        int n = Integer.parseInt(args[2]);
        try {
            for (int i = 0; i < n; i++) {
                b.refill();
            }
            out("READY");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line; (line = in.readLine()) != null; ) {
                switch (line.trim()) {
                    case "handoff":
                        out("TOOK " + b.handoff());
                        break;
                    case "retire":
                        b.retire();
                        out("OK");
                        break;
                    case "refill":
                        b.refill();
                        out("OK");
                        break;
                    case "close":
                        b.closeAll();
                        System.exit(0);
                        break;
                    default:
                        out("ERR unknown command " + line.trim());
                }
            }
            b.closeAll();
            System.exit(0);
        } catch (Exception e) {
            out("ERR " + e);
            System.exit(1);
        }
    }
}
