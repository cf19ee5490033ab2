// Opens a GraphML file with Gephi's own importer (gephi-toolkit, headless), as File -> Open
// does, and prints what Gephi made of it as JSON lines: first the import's issues, whether the
// graph is directed and its columns (id, title, type), then one line per node (id, Gephi's
// label, its attributes by column title) and one per edge (source, target, attributes).
// Run: java -cp "$(cat classpath)" tests/gephi/GephiRead.java FILE.graphml
import java.io.File;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.gephi.graph.api.Column;
import org.gephi.graph.api.DirectedGraph;
import org.gephi.graph.api.Edge;
import org.gephi.graph.api.Element;
import org.gephi.graph.api.GraphController;
import org.gephi.graph.api.GraphModel;
import org.gephi.graph.api.Node;
import org.gephi.graph.api.Table;
import org.gephi.io.importer.api.Container;
import org.gephi.io.importer.api.ImportController;
import org.gephi.io.importer.api.Issue;
import org.gephi.io.processor.plugin.DefaultProcessor;
import org.gephi.project.api.ProjectController;
import org.gephi.project.api.Workspace;
import org.openide.util.Lookup;

public class GephiRead {
    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || Character.isSurrogate(c)) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String value(Object v) {
        if (v == null) return "null";
        if (v instanceof Boolean || v instanceof Long || v instanceof Integer) return v.toString();
        if (v instanceof Double) return v.toString();
        return str(v.toString());
    }

    static List<Column> own(Table table) {
        List<Column> columns = new ArrayList<>();
        for (Column c : table) if (!c.isProperty()) columns.add(c);
        return columns;
    }

    static String attributes(Element e, List<Column> columns) {
        StringBuilder b = new StringBuilder("{");
        for (Column c : columns) {
            Object v = e.getAttribute(c);
            if (v == null) continue;
            if (b.length() > 1) b.append(',');
            b.append(str(c.getTitle())).append(':').append(value(v));
        }
        return b.append('}').toString();
    }

    static String columns(List<Column> columns) {
        StringBuilder b = new StringBuilder("[");
        for (Column c : columns) {
            if (b.length() > 1) b.append(',');
            b.append('[').append(str(c.getId())).append(',').append(str(c.getTitle())).append(',')
                .append(str(c.getTypeClass().getSimpleName())).append(']');
        }
        return b.append(']').toString();
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        ProjectController projects = Lookup.getDefault().lookup(ProjectController.class);
        projects.newProject();
        Workspace workspace = projects.getCurrentWorkspace();
        ImportController importer = Lookup.getDefault().lookup(ImportController.class);
        Container container = importer.importFile(new File(args[0]));
        StringBuilder issues = new StringBuilder("[");
        Iterator<Issue> found = container.getReport().getIssues(10000);
        while (found.hasNext()) {
            Issue issue = found.next();
            if (issues.length() > 1) issues.append(',');
            issues.append(str(issue.getLevel() + ": " + issue.getMessage()));
        }
        importer.process(container, new DefaultProcessor(), workspace);
        GraphModel model = Lookup.getDefault().lookup(GraphController.class).getGraphModel(workspace);
        DirectedGraph graph = model.getDirectedGraph();
        List<Column> nodeColumns = own(model.getNodeTable());
        List<Column> edgeColumns = own(model.getEdgeTable());
        out.println("{\"issues\":" + issues + "],\"directed\":" + model.isDirected()
            + ",\"nodes\":" + graph.getNodeCount() + ",\"edges\":" + graph.getEdgeCount()
            + ",\"nodeColumns\":" + columns(nodeColumns) + ",\"edgeColumns\":" + columns(edgeColumns) + "}");
        for (Node n : graph.getNodes())
            out.println("{\"node\":" + str(n.getId().toString()) + ",\"label\":" + value(n.getLabel())
                + ",\"attributes\":" + attributes(n, nodeColumns) + "}");
        for (Edge e : graph.getEdges())
            out.println("{\"source\":" + str(e.getSource().getId().toString()) + ",\"target\":"
                + str(e.getTarget().getId().toString()) + ",\"directed\":" + e.isDirected()
                + ",\"attributes\":" + attributes(e, edgeColumns) + "}");
        out.flush();
    }
}
