package tablets.spark;

import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.AliasIdentifier;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Between;
import org.apache.spark.sql.catalyst.expressions.BinaryComparison;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.SubqueryAlias;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampType;
import scala.Option;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/**
 * An analyzer rule that reads tablet tables with Spark's own Parquet scan in plain Spark SQL
 * ({@code spark.sql}, {@code spark.table}), as the tablets front door does: it replaces each
 * read of a tablet table's Python data source (a {@code DataSourceV2Relation} whose provider is
 * {@code tablets_<hex>}) by the plan that the registered {@link ReadPlanner} (the tablets Python
 * package, in the driver's Python process) returns: the newest snapshot's live tablets, deletion
 * vectors applied, so that Spark prunes columns and pushes filters into the Parquet reader.
 *
 * <p>Why here: PySpark's Python data sources get no column pruning, and their filter pushdown
 * is unsafe in self-joins (see the Python package's tablets.spark.datasource). The replaced plan
 * is analyzed before the optimizer runs, so self-joins are deduplicated as for views.
 *
 * <p>A relation with per-query options (time travel) keeps the Python source; so does every
 * read while no planner is registered (Spark Connect servers, JVM-only sessions) or when the
 * planner declines or fails (the Python source then reports what is wrong, e.g. a damaged
 * tablet). The query's own WHERE on the table, when it sits right above the read, is passed
 * to the planner as SQL of its simple conjuncts: it skips tablets by the log's statistics and
 * filters rows before their deletion vectors are tested.
 */
public final class NativeReads extends Rule<LogicalPlan> {
  /** The replaced read's marker ({@code SubqueryAlias}), followed by its provider name. */
  public static final String MARKER = "__tablets_native_";

  private static final Pattern PROVIDER = Pattern.compile("tablets_[0-9a-f]{12}");

  private static volatile ReadPlanner planner;

  private final SparkSession session;

  public NativeReads(SparkSession session) {
    this.session = session;
  }

  /** Registered by the tablets Python package (null: off). */
  public static void setPlanner(ReadPlanner p) {
    planner = p;
  }

  public static boolean hasPlanner() {
    return planner != null;
  }

  /** How the planner tells sessions apart. */
  public static String sessionKey(SparkSession s) {
    return Integer.toString(System.identityHashCode(s));
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    ReadPlanner p = planner;
    return p == null ? plan : rewrite(plan, p);
  }

  private LogicalPlan rewrite(LogicalPlan node, ReadPlanner p) {
    if (node.analyzed()) {
      return node;
    }
    if (node instanceof Filter) {
      Filter f = (Filter) node;
      DataSourceV2Relation rel = tabletsRead(f.child());
      if (rel != null) {
        if (!f.condition().resolved()) {
          return node; // the next pass of the analyzer, with the condition to pass on
        }
        // a nondeterministic condition (rand()) sees the rows Spark would give it: none taken early
        String where = f.condition().deterministic() ? where(f.condition(), rel) : "";
        LogicalPlan child = replace(f.child(), rel, where, p);
        return child == f.child() ? node : f.withNewChildren(seq(List.of(child)));
      }
    }
    if (node instanceof DataSourceV2Relation && isTablets((DataSourceV2Relation) node)) {
      return replace(node, (DataSourceV2Relation) node, "", p);
    }
    List<LogicalPlan> children = CollectionConverters.asJava(node.children());
    List<LogicalPlan> out = new ArrayList<>(children.size());
    boolean changed = false;
    for (LogicalPlan c : children) {
      LogicalPlan r = rewrite(c, p);
      changed |= r != c;
      out.add(r);
    }
    return changed ? node.withNewChildren(seq(out)) : node;
  }

  private static boolean isTablets(DataSourceV2Relation rel) {
    String cls = rel.table().getClass().getName();
    return cls.endsWith(".PythonTable") && PROVIDER.matcher(rel.table().name()).matches();
  }

  /** The tablet table read under {@code plan} (through subquery aliases), or null. */
  private static DataSourceV2Relation tabletsRead(LogicalPlan plan) {
    while (plan instanceof SubqueryAlias) {
      plan = ((SubqueryAlias) plan).child();
    }
    return plan instanceof DataSourceV2Relation && isTablets((DataSourceV2Relation) plan)
        ? (DataSourceV2Relation) plan
        : null;
  }

  private LogicalPlan replace(LogicalPlan under, DataSourceV2Relation rel, String where, ReadPlanner p) {
    if (under instanceof SubqueryAlias) {
      LogicalPlan child = ((SubqueryAlias) under).child();
      LogicalPlan r = replace(child, rel, where, p);
      return r == child ? under : under.withNewChildren(seq(List.of(r)));
    }
    LogicalPlan read = nativeRead(rel, where, p);
    return read == null ? under : read;
  }

  private LogicalPlan nativeRead(DataSourceV2Relation rel, String where, ReadPlanner p) {
    if (!rel.options().isEmpty()) {
      return null;
    }
    String provider = rel.table().name();
    Object ds;
    try {
      ds = p.plan(sessionKey(session), provider, where);
    } catch (RuntimeException e) { // the Python side failed: its source reports it on reading
      logWarning(() -> "tablets: native read planning failed, reading " + provider + " through the Python source: " + e);
      return null;
    }
    if (!(ds instanceof org.apache.spark.sql.classic.Dataset)) {
      return null;
    }
    LogicalPlan plan = ((org.apache.spark.sql.classic.Dataset<?>) ds).queryExecution().analyzed();
    // the relation's columns by name (the catalog's schema may lag the table's: a column added
    // by the table API is read as it is in the catalog until the catalog is synced)
    List<Attribute> fresh = CollectionConverters.asJava(plan.output());
    List<NamedExpression> columns = new ArrayList<>();
    for (AttributeReference o : CollectionConverters.asJava(rel.output())) {
      Attribute n = null;
      for (Attribute f : fresh) {
        if (f.name().equalsIgnoreCase(o.name())) {
          n = f;
        }
      }
      if (n == null || !n.dataType().sameType(o.dataType())) {
        return null;
      }
      columns.add(new Alias(n, o.name(), o.exprId(), o.qualifier(), Option.apply(o.metadata()), seq(List.of())));
    }
    return new SubqueryAlias(new AliasIdentifier(MARKER + provider), new Project(seq(columns), plan));
  }

  // --- the query's filter on the table, as SQL for the planner ---------------------------

  private static String where(Expression cond, DataSourceV2Relation rel) {
    List<String> out = new ArrayList<>();
    for (Expression c : conjuncts(cond, new ArrayList<>())) {
      String s = render(c, rel);
      if (s != null) {
        out.add(s);
      }
    }
    return String.join(" AND ", out);
  }

  private static List<Expression> conjuncts(Expression e, List<Expression> out) {
    if (e instanceof Between) {
      Between b = (Between) e;
      out.add(new GreaterThanOrEqual(b.input(), b.lower()));
      out.add(new LessThanOrEqual(b.input(), b.upper()));
      return out;
    }
    if (e instanceof And) {
      conjuncts(((And) e).left(), out);
      conjuncts(((And) e).right(), out);
    } else {
      out.add(e);
    }
    return out;
  }

  private static String render(Expression c, DataSourceV2Relation rel) {
    if (c instanceof IsNull || c instanceof IsNotNull) {
      String col = column(c.children().apply(0), rel);
      return col == null ? null : col + (c instanceof IsNull ? " IS NULL" : " IS NOT NULL");
    }
    if (c instanceof BinaryComparison && !(c instanceof EqualNullSafe)) {
      BinaryComparison b = (BinaryComparison) c;
      String op = b.symbol();
      String l = column(b.left(), rel);
      String r = column(b.right(), rel);
      if (l != null && r == null) {
        String v = literal(b.right(), b.left().dataType());
        return v == null ? null : l + " " + op + " " + v;
      }
      if (r != null && l == null) {
        String v = literal(b.left(), b.right().dataType());
        return v == null ? null : r + " " + flip(op) + " " + v;
      }
      return null;
    }
    if (c instanceof In) {
      In in = (In) c;
      String col = column(in.value(), rel);
      if (col == null) {
        return null;
      }
      List<String> values = new ArrayList<>();
      for (Expression e : CollectionConverters.asJava(in.list())) {
        String v = literal(e, in.value().dataType());
        if (v == null) {
          return null;
        }
        values.add(v);
      }
      return values.isEmpty() ? null : col + " IN (" + String.join(", ", values) + ")";
    }
    return null;
  }

  private static String flip(String op) {
    switch (op) {
      case "<": return ">";
      case ">": return "<";
      case "<=": return ">=";
      case ">=": return "<=";
      default: return op;
    }
  }

  private static String column(Expression e, DataSourceV2Relation rel) {
    if (e instanceof Cast && widens(((Cast) e).child().dataType(), e.dataType())) {
      e = ((Cast) e).child(); // IN's coercion: cast(id AS BIGINT) of a BIGINT or INT column
    }
    if (!(e instanceof AttributeReference)) {
      return null;
    }
    AttributeReference a = (AttributeReference) e;
    for (AttributeReference o : CollectionConverters.asJava(rel.output())) {
      if (o.exprId().equals(a.exprId())) {
        return "`" + o.name().replace("`", "``") + "`";
      }
    }
    return null;
  }

  /**
   * A constant of the column's type, as SQL; else null. Integers of another width too (BETWEEN's
   * and IN's bounds before type coercion): comparing them casts nothing that can fail. A foldable
   * expression is evaluated: {@code ts >= '2024-01-01'} is a cast of text in the session's zone.
   */
  private static String literal(Expression e, DataType type) {
    if (!e.foldable() || !e.deterministic()) {
      return null;
    }
    if (e.dataType() instanceof StringType && (type instanceof TimestampType || type instanceof DateType)) {
      // text that BETWEEN compares before type coercion: passed on where it reads alike in every
      // session time zone (a date; an instant with its offset)
      Object v = e.eval(null);
      String s = v == null ? "" : v.toString();
      Pattern p = type instanceof DateType ? DATE_TEXT : INSTANT_TEXT;
      return p.matcher(s).matches() ? "'" + s + "'" : null;
    }
    if (!(e.dataType().sameType(type) || integral(e.dataType()) && integral(type))) {
      return null;
    }
    Object v;
    try {
      v = e.eval(null);
    } catch (RuntimeException ex) {
      return null;
    }
    if (v == null) {
      return null;
    }
    if (integral(type)) {
      return v.toString();
    }
    if (type instanceof StringType) {
      String s = v.toString();
      return s.indexOf('\'') >= 0 || s.indexOf('\\') >= 0 ? null : "'" + s + "'";
    }
    if (type instanceof DateType) {
      return "DATE'" + LocalDate.ofEpochDay((Integer) v) + "'";
    }
    if (type instanceof TimestampType) {
      // the instant as text with its offset, which reads alike in every session time zone (dbt's
      // microbatch bounds have this form: '2024-01-01 00:00:00+00:00' against a TIMESTAMP column)
      LocalDateTime t = LocalDateTime.ofInstant(Instant.EPOCH.plus((Long) v, ChronoUnit.MICROS), ZoneOffset.UTC);
      return t.getYear() < 1000 || t.getYear() > 9999 ? null : "'" + t.format(INSTANT) + "+00:00'";
    }
    return null;
  }

  private static final DateTimeFormatter INSTANT = DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSSSSS");
  private static final Pattern DATE_TEXT = Pattern.compile("\\d{4}-\\d{2}-\\d{2}");
  private static final Pattern INSTANT_TEXT =
      Pattern.compile("\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?[+-]\\d{2}:\\d{2}");

  /** A cast that keeps every value as it is: to the same type, or to a wider integer. */
  private static boolean widens(DataType from, DataType to) {
    return from.sameType(to) || integral(from) && integral(to) && to.defaultSize() >= from.defaultSize();
  }

  private static boolean integral(DataType t) {
    return t instanceof IntegerType || t instanceof LongType || t instanceof ShortType || t instanceof ByteType;
  }

  private static <T> Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toSeq();
  }
}
