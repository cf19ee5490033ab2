package dev.pith.neo4j;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.SettingValueParsers;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.config.Setting;
import org.neo4j.logging.Level;
import org.neo4j.logging.log4j.Log4jLogProvider;
import org.neo4j.server.configuration.ServerSettings;

/**
 * A local Neo4j 5.26 Community server for development and tests, without Docker.
 *
 * <p>Runs the embedded DBMS with only a Bolt listener on 127.0.0.1 (no HTTP, no routing
 * connector, no usage reporting). Started in the background by {@code scripts/neo4j}; stops
 * cleanly on SIGTERM through a shutdown hook.
 *
 * <p>Environment:
 * <ul>
 *   <li>{@code NEO4J_DATA} – Neo4j home: databases, transaction logs, {@code logs/debug.log},
 *       the pid file {@code neo4j.pid}. Required (the script passes it).</li>
 *   <li>{@code NEO4J_BOLT_PORT} – Bolt port on 127.0.0.1, default 7687.</li>
 *   <li>{@code NEO4J_PAGECACHE} – page cache size, Neo4j byte syntax ("512m", "1g"); default 512m.</li>
 *   <li>{@code NEO4J_TX_TIMEOUT} – transaction timeout, Neo4j duration syntax ("10m", "0s" =
 *       none); default 10m.</li>
 *   <li>{@code NEO4J_PASSWORD} – if set (8+ characters), auth is enabled and the {@code neo4j}
 *       user's password is set to it at every start; if unset, auth is disabled.</li>
 * </ul>
 *
 * <p>Once Bolt accepts connections it prints one line starting with {@code READY bolt://} to
 * stdout; the script waits for that line.
 */
public final class Launcher {

    private Launcher() {}

    public static void main(String[] args) {
        try {
            run();
        } catch (Throwable t) {
            // Neo4j's own threads would keep a half-started JVM alive: exit instead (the
            // shutdown hook, if registered, still shuts the DBMS down cleanly).
            t.printStackTrace(System.out);
            System.out.println("neo4j-launcher: FAILED: " + t);
            System.out.flush();
            System.exit(1);
        }
    }

    private static void run() throws Exception {
        Path home = Path.of(requireEnv("NEO4J_DATA")).toAbsolutePath().normalize();
        int port = Integer.parseInt(env("NEO4J_BOLT_PORT", "7687"));
        long pageCache = SettingValueParsers.BYTES.parse(env("NEO4J_PAGECACHE", "512m"));
        Duration txTimeout = SettingValueParsers.DURATION.parse(env("NEO4J_TX_TIMEOUT", "10m"));
        String password = System.getenv("NEO4J_PASSWORD");
        boolean auth = password != null && !password.isEmpty();

        Files.createDirectories(home.resolve("import"));
        Path pidFile = home.resolve("neo4j.pid");

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                // Neo4j's user-facing log ("neo4j.log" in a server install) goes to stdout, which
                // the script redirects to NEO4J_DATA/logs/launcher.log. debug.log is in logs/ too.
                .setUserLogProvider(new Log4jLogProvider(System.out, Level.INFO))
                .setConfig(Map.<Setting<?>, Object>of(
                        // Bolt only, plain text, loopback only.
                        BoltConnector.enabled, true,
                        BoltConnector.listen_address, new SocketAddress("127.0.0.1", port),
                        BoltConnector.advertised_address, new SocketAddress("127.0.0.1", port),
                        BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED,
                        GraphDatabaseSettings.default_listen_address, new SocketAddress("127.0.0.1"),
                        // No HTTP(S) (the embedded DBMS does not start it anyway) and no
                        // server-side routing connector (it would listen on :7688).
                        HttpConnector.enabled, false,
                        HttpsConnector.enabled, false,
                        GraphDatabaseSettings.routing_enabled, false,
                        // No phoning home.
                        GraphDatabaseSettings.udc_enabled, false,
                        ServerSettings.allow_telemetry, false))
                .setConfig(Map.<Setting<?>, Object>of(
                        GraphDatabaseSettings.auth_enabled, auth,
                        GraphDatabaseSettings.pagecache_memory, pageCache,
                        GraphDatabaseSettings.transaction_timeout, txTimeout,
                        // LOAD CSV 'file:///x.csv' reads NEO4J_DATA/import/x.csv.
                        GraphDatabaseSettings.load_csv_file_url_root, home.resolve("import"),
                        // A dev server: small transaction logs. By default each database
                        // preallocates a 256 MiB log file and keeps 2 days of them.
                        GraphDatabaseSettings.preallocate_logical_logs, false,
                        GraphDatabaseSettings.logical_log_rotation_threshold, 64L << 20,
                        GraphDatabaseSettings.keep_logical_logs, "256M size"))
                .build();

        // Registered right after build(): SIGTERM/SIGINT shut the DBMS down cleanly (flushes
        // the page cache, so the next start needs no recovery).
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("neo4j-launcher: shutting down");
            try {
                dbms.shutdown();
            } finally {
                try {
                    Files.deleteIfExists(pidFile);
                } catch (IOException ignored) {
                    // the script treats a stale pid file as "not running"
                }
                System.out.println("neo4j-launcher: stopped");
                System.out.flush();
                stopped.countDown();
            }
        }, "neo4j-launcher-shutdown"));

        GraphDatabaseService db = dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        if (!db.isAvailable(Duration.ofMinutes(3).toMillis())) {
            throw new IllegalStateException("database 'neo4j' did not become available");
        }
        if (auth) {
            setPassword(dbms, password);
        }

        Files.writeString(pidFile, ProcessHandle.current().pid() + "\n", StandardCharsets.US_ASCII);
        System.out.printf("READY bolt://127.0.0.1:%d (auth %s, page cache %d MiB, pid %d)%n",
                port, auth ? "on" : "off", pageCache >> 20, ProcessHandle.current().pid());
        System.out.flush();
        stopped.await(); // the shutdown hook releases it; the JVM then exits
    }

    /**
     * Sets the {@code neo4j} user's password through the system database (embedded transactions
     * run with full rights, so no login is needed). A fresh store has neo4j/neo4j with
     * "change required"; this replaces it. Run at every start so NEO4J_PASSWORD is the truth.
     */
    private static void setPassword(DatabaseManagementService dbms, String password) {
        GraphDatabaseService system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        try {
            system.executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
            System.out.println("neo4j-launcher: password of user 'neo4j' set from NEO4J_PASSWORD");
        } catch (RuntimeException e) {
            // Setting the same password again is refused: then it is already right.
            if (String.valueOf(e.getMessage()).contains("cannot be the same")) {
                System.out.println("neo4j-launcher: password of user 'neo4j' unchanged");
            } else {
                throw e;
            }
        }
    }

    private static String env(String name, String fallback) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? fallback : v.trim();
    }

    private static String requireEnv(String name) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            throw new IllegalArgumentException(name + " must be set");
        }
        return v;
    }
}
