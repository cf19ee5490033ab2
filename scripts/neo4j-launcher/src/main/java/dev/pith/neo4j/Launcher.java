package dev.pith.neo4j;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;

import org.neo4j.cli.ExecutionContext;
import org.neo4j.commandline.admin.security.SetInitialPasswordCommand;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.SettingValueParsers;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.config.Setting;
import org.neo4j.internal.kernel.api.connectioninfo.ClientConnectionInfo;
import org.neo4j.internal.kernel.api.security.AuthenticationResult;
import org.neo4j.internal.kernel.api.security.LoginContext;
import org.neo4j.io.fs.DefaultFileSystemAbstraction;
import org.neo4j.kernel.api.security.AuthManager;
import org.neo4j.kernel.api.security.AuthToken;
import org.neo4j.kernel.internal.GraphDatabaseAPI;
import org.neo4j.logging.Level;
import org.neo4j.logging.log4j.Log4jLogProvider;
import org.neo4j.server.configuration.ConfigurableServerModules;
import org.neo4j.server.configuration.ServerSettings;
import picocli.CommandLine;

/**
 * A local Neo4j 5.26 Community server for development and tests, without Docker.
 *
 * <p>Runs the embedded DBMS with a Bolt listener and an HTTP listener for Neo4j Browser (at
 * {@code /browser/}) on 127.0.0.1 only, with authentication on and the APOC Core and Graph Data
 * Science plugins loaded from the plugin directory (no routing connector, no usage reporting).
 * The embedded DBMS starts the same Jetty web server as a server install once the HTTP connector
 * is enabled. Started in the background by {@code scripts/neo4j}; stops cleanly on SIGTERM
 * through a shutdown hook.
 *
 * <p>Environment:
 * <ul>
 *   <li>{@code NEO4J_DATA} – Neo4j home: databases, transaction logs, {@code logs/debug.log},
 *       the pid file {@code neo4j.pid}. Required (the script passes it).</li>
 *   <li>{@code NEO4J_BOLT_PORT} – Bolt port on 127.0.0.1, default 7687.</li>
 *   <li>{@code NEO4J_HTTP_PORT} – HTTP port on 127.0.0.1 (Neo4j Browser), default 7474.</li>
 *   <li>{@code NEO4J_PLUGINS_DIR} – Neo4j's plugin directory: the APOC and GDS jars, which
 *       must also be on the classpath. Required (the script passes it).</li>
 *   <li>{@code NEO4J_PAGECACHE} – page cache size, Neo4j byte syntax ("512m", "1g"); default 512m.</li>
 *   <li>{@code NEO4J_TX_TIMEOUT} – transaction timeout, Neo4j duration syntax ("10m", "0s" =
 *       none); default 10m.</li>
 *   <li>{@code NEO4J_TX_MEMORY} – the most memory one transaction may use
 *       ({@code db.memory.transaction.max}), Neo4j byte syntax; default 0 (no limit of its own:
 *       all transactions share 70% of the heap).</li>
 *   <li>{@code NEO4J_AUTH} – {@code none}: authentication off. Anything else (or unset): on,
 *       and the {@code neo4j} user's password is set at every start to the content of
 *       {@code NEO4J_DATA/password}, which the script writes (mode 0600) before starting us.
 *       The password never travels through the environment or the command line.</li>
 * </ul>
 *
 * <p>Once Bolt accepts connections it prints one line starting with {@code READY bolt://} to
 * stdout; the script waits for that line.
 */
public final class Launcher {

    /** The plugins' namespaces: loaded (allow-list) and given full access (unrestricted). */
    private static final List<String> PLUGIN_PROCEDURES = List.of("apoc.*", "gds.*");

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
        int httpPort = Integer.parseInt(env("NEO4J_HTTP_PORT", "7474"));
        Path plugins = Path.of(requireEnv("NEO4J_PLUGINS_DIR")).toAbsolutePath().normalize();
        long pageCache = SettingValueParsers.BYTES.parse(env("NEO4J_PAGECACHE", "512m"));
        Duration txTimeout = SettingValueParsers.DURATION.parse(env("NEO4J_TX_TIMEOUT", "10m"));
        long txMemory = SettingValueParsers.BYTES.parse(env("NEO4J_TX_MEMORY", "0"));
        boolean auth = !"none".equalsIgnoreCase(env("NEO4J_AUTH", ""));
        String password = auth ? readPassword(home.resolve("password")) : null;

        Files.createDirectories(home.resolve("import"));
        Path pidFile = home.resolve("neo4j.pid");
        if (auth && Files.notExists(home.resolve("data").resolve("databases").resolve("system"))) {
            setInitialPassword(home, password);
        }

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
                        // No HTTPS, no server-side routing connector (it would listen on :7688).
                        HttpsConnector.enabled, false,
                        GraphDatabaseSettings.routing_enabled, false,
                        // No phoning home (the DBMS, and the Browser's telemetry).
                        GraphDatabaseSettings.udc_enabled, false,
                        ServerSettings.allow_telemetry, false))
                .setConfig(Map.<Setting<?>, Object>of(
                        // HTTP on loopback, for Neo4j Browser only (/browser/, and the discovery
                        // document at / that tells it the Bolt address). The HTTP query and
                        // transaction APIs stay off: their JAX-RS set-up costs seconds of CPU at
                        // every start, and everything here speaks Bolt.
                        HttpConnector.enabled, true,
                        HttpConnector.listen_address, new SocketAddress("127.0.0.1", httpPort),
                        HttpConnector.advertised_address, new SocketAddress("127.0.0.1", httpPort),
                        ServerSettings.http_enabled_modules, Set.of(ConfigurableServerModules.BROWSER)))
                .setConfig(Map.<Setting<?>, Object>of(
                        // Stop in ~2 s instead of ~13 s: by default Bolt waits 5 s for its
                        // connections, 5 s for its worker threads, and Netty has a quiet period.
                        // A dev/test server has nothing to drain (transactions are terminated
                        // by the shutdown anyway); tests restart and stop servers often.
                        BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofSeconds(1),
                        BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofSeconds(1),
                        GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0))
                .setConfig(Map.<Setting<?>, Object>of(
                        // Plugins: Neo4j registers the procedures of the jars in this folder
                        // (APOC, GDS). Only theirs are loaded, and they may use internal APIs.
                        GraphDatabaseSettings.plugin_dir, plugins,
                        GraphDatabaseSettings.procedure_allowlist, PLUGIN_PROCEDURES,
                        GraphDatabaseSettings.procedure_unrestricted, PLUGIN_PROCEDURES))
                .setConfig(Map.<Setting<?>, Object>of(
                        GraphDatabaseSettings.auth_enabled, auth,
                        GraphDatabaseSettings.pagecache_memory, pageCache,
                        GraphDatabaseSettings.transaction_timeout, txTimeout,
                        GraphDatabaseSettings.memory_transaction_max_size, txMemory,
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
        long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
        while (!db.isAvailable(500)) {
            // A database that failed to start (a damaged store) never becomes available:
            // say why at once instead of waiting out the start timeout.
            String failure = startFailure(dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME));
            if (failure != null) {
                throw new IllegalStateException("database 'neo4j' failed to start: " + failure);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("database 'neo4j' did not become available");
            }
        }
        if (auth) {
            ensurePassword(dbms, password);
        }

        Files.writeString(pidFile, ProcessHandle.current().pid() + "\n", StandardCharsets.US_ASCII);
        System.out.printf("READY bolt://127.0.0.1:%d http://127.0.0.1:%d (auth %s, page cache %d MiB, pid %d)%n",
                port, httpPort, auth ? "on" : "off", pageCache >> 20, ProcessHandle.current().pid());
        System.out.flush();
        stopped.await(); // the shutdown hook releases it; the JVM then exits
    }

    /** The password in {@code file} (written by the script): its first line, 8+ characters. */
    private static String readPassword(Path file) throws IOException {
        String text = Files.readString(file, StandardCharsets.UTF_8);
        String password = text.lines().findFirst().orElse("");
        if (password.length() < 8) {
            throw new IllegalArgumentException(file + ": the password must have 8 or more characters");
        }
        return password;
    }

    /**
     * A new store: let the system database create user {@code neo4j} with this password, the
     * way {@code neo4j-admin dbms set-initial-password} does (it writes data/dbms/auth.ini, read
     * once when the system database is first created). This spares the first start the Cypher
     * {@code ALTER USER} below, which costs several CPU seconds of query compilation.
     */
    private static void setInitialPassword(Path home, String password) throws IOException {
        var quiet = new PrintStream(OutputStream.nullOutputStream());
        var context = new ExecutionContext(home, home.resolve("conf"), quiet, System.out, new DefaultFileSystemAbstraction());
        int code = new CommandLine(new SetInitialPasswordCommand(context)).execute(password);
        if (code != 0) {
            throw new IllegalStateException("neo4j-admin set-initial-password failed with exit code " + code);
        }
        // A salted hash, but still nobody else's business (the command leaves it 0644).
        Files.setPosixFilePermissions(home.resolve("data/dbms/auth.ini"), PosixFilePermissions.fromString("rw-------"));
    }

    /**
     * Makes the password of user {@code neo4j} the one in the password file: checked with a
     * login (no Cypher, so cheap), and set through the system database only if it differs (a
     * password changed in the file or by a user, or a store that began without auth). Embedded
     * transactions run with full rights, so no login is needed for that.
     */
    private static void ensurePassword(DatabaseManagementService dbms, String password) throws Exception {
        GraphDatabaseService system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        AuthManager authManager =
                ((GraphDatabaseAPI) system).getDependencyResolver().resolveDependency(AuthManager.class);
        LoginContext login = authManager.login(
                AuthToken.newBasicAuthToken("neo4j", password), ClientConnectionInfo.EMBEDDED_CONNECTION);
        if (login.subject().getAuthenticationResult() == AuthenticationResult.SUCCESS) {
            System.out.println("neo4j-launcher: user 'neo4j' has the password of the password file");
            return;
        }
        system.executeTransactionally(
                "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
        System.out.println("neo4j-launcher: password of user 'neo4j' set from the password file");
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

    /** Why the default database failed to start, from {@code SHOW DATABASE}; null while it may still start. */
    static String startFailure(GraphDatabaseService system) {
        return system.executeTransactionally(
                "SHOW DATABASE neo4j YIELD currentStatus, statusMessage",
                Map.of(),
                result -> {
                    if (!result.hasNext()) {
                        return null;
                    }
                    Map<String, Object> row = result.next();
                    Object status = row.get("currentStatus");
                    Object message = row.get("statusMessage");
                    boolean failed = !"online".equals(status) && !"starting".equals(status)
                            && message instanceof String text && !text.isBlank();
                    return failed ? status + ": " + message : null;
                });
    }
}
