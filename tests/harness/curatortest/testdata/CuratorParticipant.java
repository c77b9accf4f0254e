// CuratorParticipant is one real Apache Curator 5.4 election participant, driven by the Go
// package tests/harness/curatortest over a line protocol on stdin/stdout.
//
// Usage: java -cp <curator classpath>:<classdir> CuratorParticipant <connectString> <path>
//        <latch|selector> <id> [termMillis]
//
// latch:    a LeaderLatch(client, path, id), started.
// selector: a LeaderSelector(client, path, listener) with autoRequeue() and setId(id); its
//           takeLeadership holds leadership for termMillis (0 = until "release") and returns,
//           which re-queues it at the back.
//
// Output lines (each flushed at once):
//   READY                               once started and listed among its own participants
//   EVENT leader | EVENT notleader      when this participant's leadership changes
//   STATUS <true|false> <leaderId|-> <id,id,...|->   reply to "status"
//   LEADING <true|false>                reply to "leading" (hasLeadership() only, no ZooKeeper read)
//   OK                                  reply to "release"
//   CLOSED                              reply to "close", then exit 0
//   ERR <message>                       a command failed (or an unknown command)
// Commands (one per line on stdin): status, leading, release, close. End of stdin closes
// everything and exits 0, like "close".
//
// release: selector: end the current takeLeadership now (a no-op when not leading);
//          latch: close the latch and start a new one with the same id (back of the queue).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class CuratorParticipant {
    private static final int SESSION_TIMEOUT_MS = 4000;
    private static final int CONNECTION_TIMEOUT_MS = 4000;
    private static final long READY_TIMEOUT_MS = 30000;

    private static final PrintStream OUT =
        new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);

    private final CuratorFramework client;
    private final String path;
    private final boolean latchMode;
    private final String id;
    private final long termMillis;

    private final Object lock = new Object();
    private boolean leading;                 // what the EVENT lines said last; guarded by lock
    private volatile LeaderLatch latch;      // latch mode: the current latch
    // stepping is set before a latch is closed: Curator 5.4's LeaderLatch.close deletes the node
    // first and clears hasLeadership() only afterwards, so an application that reads
    // hasLeadership() would still act for a moment after its successor may have started. Like
    // such an application should, this program stops reporting leadership before it closes.
    private volatile boolean stepping;
    private LeaderSelector selector;         // selector mode
    private CountDownLatch term;             // selector: the running takeLeadership's release; guarded by lock

    static void out(String line) {
        synchronized (OUT) {
            OUT.print(line);
            OUT.print('\n');
            OUT.flush();
        }
    }

    private CuratorParticipant(CuratorFramework client, String path, boolean latchMode, String id, long termMillis) {
        this.client = client;
        this.path = path;
        this.latchMode = latchMode;
        this.id = id;
        this.termMillis = termMillis;
    }

    /** Prints an EVENT line when this participant's leadership really changes. */
    private void setLeading(boolean now) {
        synchronized (lock) {
            if (leading == now) {
                return;
            }
            leading = now;
            out(now ? "EVENT leader" : "EVENT notleader");
        }
    }

    private LeaderLatch newLatch() throws Exception {
        final LeaderLatch l = new LeaderLatch(client, path, id);
        l.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() {
                if (latch == l) {
                    setLeading(true);
                }
            }

            @Override
            public void notLeader() {
                if (latch == l) {
                    setLeading(false);
                }
            }
        });
        latch = l;
        l.start();
        return l;
    }

    private void start() throws Exception {
        if (latchMode) {
            newLatch();
            return;
        }
        selector = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework c) {
                CountDownLatch release = new CountDownLatch(1);
                synchronized (lock) {
                    term = release;
                }
                setLeading(true);
                try {
                    if (termMillis > 0) {
                        release.await(termMillis, TimeUnit.MILLISECONDS);
                    } else {
                        release.await();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt(); // cancelled: suspended, lost or closing
                } finally {
                    synchronized (lock) {
                        if (term == release) {
                            term = null;
                        }
                    }
                    setLeading(false);
                }
            }
        });
        selector.autoRequeue();
        selector.setId(id);
        selector.start();
    }

    private Collection<Participant> participants() throws Exception {
        return latchMode ? latch.getParticipants() : selector.getParticipants();
    }

    private boolean hasLeadership() {
        return latchMode ? !stepping && latch.hasLeadership() : selector.hasLeadership();
    }

    /** Waits until our own node exists and our id is among the participants. */
    private void awaitJoined() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(READY_TIMEOUT_MS);
        while (System.nanoTime() < deadline) {
            if (joined()) {
                return;
            }
            Thread.sleep(10);
        }
        throw new IllegalStateException("not among the participants of " + path + " after " + READY_TIMEOUT_MS + " ms");
    }

    private boolean joined() throws Exception {
        if (latchMode) {
            String ours = latch.getOurPath();
            if (ours == null || client.checkExists().forPath(ours) == null) {
                return false;
            }
        }
        for (Participant p : participants()) {
            if (id.equals(p.getId())) {
                return true;
            }
        }
        return false;
    }

    private String status() throws Exception {
        boolean isLeader = hasLeadership();
        Participant leader = latchMode ? latch.getLeader() : selector.getLeader();
        List<String> ids = new ArrayList<>();
        for (Participant p : participants()) {
            ids.add(p.getId());
        }
        String leaderId = leader == null || leader.getId() == null || leader.getId().isEmpty() ? "-" : leader.getId();
        return "STATUS " + isLeader + " " + leaderId + " " + (ids.isEmpty() ? "-" : String.join(",", ids));
    }

    private void release() throws Exception {
        if (!latchMode) {
            synchronized (lock) {
                if (term != null) {
                    term.countDown();
                }
            }
            return;
        }
        stepping = true;
        setLeading(false);
        LeaderLatch old = latch;
        latch = null; // late callbacks of the old latch are ignored from here on
        old.close();  // SILENT: we reported the change ourselves
        newLatch();
        stepping = false;
        awaitJoined();
    }

    private void close() {
        try {
            if (latchMode) {
                stepping = true;
                setLeading(false);
                LeaderLatch l = latch;
                latch = null;
                if (l != null) {
                    l.close();
                }
            } else if (selector != null) {
                selector.close(); // interrupts takeLeadership, which reports notleader
            }
        } catch (Exception e) {
            System.err.println("close: " + e);
        }
        setLeading(false);
        client.close();
    }

    /** Carries out one command from the Go side and returns its reply line. */
    private String answer(String cmd) throws Exception {
        switch (cmd) {
            case "status":
                return status();
            case "leading":
                return "LEADING " + hasLeadership();
            case "release":
                release();
                return "OK";
            case "close":
                close();
                return "CLOSED";
            default:
                return "ERR unknown command " + cmd;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 4 || args.length > 5 || !(args[2].equals("latch") || args[2].equals("selector"))) {
            System.err.println("usage: CuratorParticipant <connectString> <path> <latch|selector> <id> [termMillis]");
            System.exit(2);
        }
        long termMillis = args.length == 5 ? Long.parseLong(args[4]) : 0;
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], SESSION_TIMEOUT_MS, CONNECTION_TIMEOUT_MS,
            new ExponentialBackoffRetry(100, 10));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("could not connect to " + args[0] + " within 30 s");
            System.exit(1);
        }
        CuratorParticipant p = new CuratorParticipant(client, args[1], args[2].equals("latch"), args[3], termMillis);
        try {
            p.start();
            p.awaitJoined();
        } catch (Exception e) {
            System.err.println("start: " + e);
            e.printStackTrace();
            System.exit(1);
        }
        out("READY");

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String cmd = line.trim();
            if (cmd.isEmpty()) {
                continue;
            }
            try {
                out(p.answer(cmd));
                if (cmd.equals("close")) {
                    System.exit(0); // after CLOSED
                }
            } catch (Exception e) {
                String msg = String.valueOf(e).replace('\n', ' ');
                System.err.println(cmd + ": " + msg);
                out("ERR " + msg);
            }
        }
        p.close(); // stdin closed: the Go side is gone
        System.exit(0);
    }
}
