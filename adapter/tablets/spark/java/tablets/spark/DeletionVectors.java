package tablets.spark;

import java.io.IOException;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.util.SerializableConfiguration;
import org.roaringbitmap.RoaringBitmap;

/**
 * The deletion vectors of one scan, applied where its rows are read: each task loads the vector
 * of a tablet the first time one of its rows asks, from the table's store through Hadoop's file
 * system (as the Parquet scan reads the tablet), and each executor keeps the loaded vectors
 * ({@link #CACHE_BYTES}) for later tasks and queries. The plan carries one entry per tablet with
 * a deletion vector (its file, size, CRC-32 and cardinality, as the log's set_dv records them),
 * never the vectors themselves: what the driver sends grows with the number of tablets, not rows.
 *
 * <p>A tablet is known by its file name (the Parquet scan's {@code _metadata.file_name}) or by
 * the 31-bit tag of its stored row ids. The file is checked as the Python reader checks it
 * (docs/FORMAT_DV.md): size and CRC-32 against the log, version byte, length, magic, and the
 * bitmap's cardinality; a mismatch fails the query.
 */
public final class DeletionVectors implements Serializable {
  private static final long serialVersionUID = 1L;

  /** Loaded vectors kept per executor, by their serialized size (a bitmap holds about as much). */
  static final long CACHE_BYTES = 256L << 20;

  private static final int MAGIC = 1681511377;

  /** What the log records of one tablet's deletion vector. */
  static final class Entry implements Serializable {
    private static final long serialVersionUID = 1L;
    final String path;
    final long size;
    final int crc;
    final long cardinality;

    Entry(String path, long size, int crc, long cardinality) {
      this.path = path;
      this.size = size;
      this.crc = crc;
      this.cardinality = cardinality;
    }

    String key() {
      return path + "#" + size + "#" + crc;
    }
  }

  /** A loaded vector: its 32-bit Roaring bitmaps by the high 32 bits of the row numbers. */
  static final class Bits {
    final int[] highs;
    final RoaringBitmap[] lows;
    final long bytes;

    Bits(int[] highs, RoaringBitmap[] lows, long bytes) {
      this.highs = highs;
      this.lows = lows;
      this.bytes = bytes;
    }

    boolean contains(long row) {
      int high = (int) (row >>> 32);
      for (int i = 0; i < highs.length; i++) {
        if (highs[i] == high) {
          return lows[i].contains((int) row);
        }
      }
      return false;
    }
  }

  private final boolean byTag;
  private final HashMap<UTF8String, Entry> byName;
  private final HashMap<Long, Entry> byTagMap;
  private final Broadcast<SerializableConfiguration> conf;

  // the task's last tablet: rows of one file come one after another
  private transient Object lastKey;
  private transient long lastTag = -1;
  private transient Bits lastBits;

  private DeletionVectors(
      boolean byTag, HashMap<UTF8String, Entry> byName, HashMap<Long, Entry> byTagMap,
      Broadcast<SerializableConfiguration> conf) {
    this.byTag = byTag;
    this.byName = byName;
    this.byTagMap = byTagMap;
    this.conf = conf;
  }

  boolean byTag() {
    return byTag;
  }

  public int size() {
    return byTag ? byTagMap.size() : byName.size();
  }

  @Override
  public String toString() {
    return size() + " deletion vectors";
  }

  /**
   * The column that is true for a live row: {@code key} (the file name, a string, or with
   * {@code byTag} the row ids' tag, a long) and {@code row} (the row number in the file) against
   * {@code entries}: one line a tablet with a deletion vector, tab-separated: key, Hadoop path of
   * the file, size, CRC-32 (8 hex digits), cardinality.
   */
  public static Column live(SparkSession spark, Column key, Column row, boolean byTag, String entries) {
    HashMap<UTF8String, Entry> byName = new HashMap<>();
    HashMap<Long, Entry> byTagMap = new HashMap<>();
    for (String line : entries.split("\n")) {
      if (line.isEmpty()) {
        continue;
      }
      String[] f = line.split("\t");
      Entry e = new Entry(f[1], Long.parseLong(f[2]), (int) Long.parseLong(f[3], 16), Long.parseLong(f[4]));
      if (byTag) {
        byTagMap.put(Long.parseLong(f[0]), e);
      } else {
        byName.put(UTF8String.fromString(f[0]), e);
      }
    }
    Configuration hadoop = spark.sessionState().newHadoopConf();
    Broadcast<SerializableConfiguration> conf =
        spark.sparkContext().broadcast(
            new SerializableConfiguration(hadoop),
            scala.reflect.ClassTag$.MODULE$.apply(SerializableConfiguration.class));
    Expression e =
        new LiveRow(
            ExpressionUtils.expression(key),
            ExpressionUtils.expression(row),
            new DeletionVectors(byTag, byName, byTagMap, conf));
    return ExpressionUtils.column(e);
  }

  /** Whether the row {@code row} of the tablet file named {@code name} is live. */
  public boolean liveByName(UTF8String name, long row) {
    if (name == null) {
      return true;
    }
    if (name != lastKey && !name.equals(lastKey)) {
      lastKey = name.clone(); // the scan may reuse the bytes for the next file
      Entry e = byName.get(lastKey);
      lastBits = e == null ? null : load(e);
    }
    return lastBits == null || !lastBits.contains(row);
  }

  /** Whether the row {@code row} of the tablet whose row ids carry {@code tag} is live. */
  public boolean liveByTag(long tag, long row) {
    if (tag != lastTag || lastKey == null) {
      lastTag = tag;
      lastKey = Boolean.TRUE;
      Entry e = byTagMap.get(tag);
      lastBits = e == null ? null : load(e);
    }
    return lastBits == null || !lastBits.contains(row);
  }

  // --- the executor's cache --------------------------------------------------------------

  private static final ConcurrentHashMap<String, Bits> CACHE = new ConcurrentHashMap<>();
  private static final ConcurrentLinkedQueue<String> ORDER = new ConcurrentLinkedQueue<>();
  private static final AtomicLong CACHED = new AtomicLong();

  private Bits load(Entry e) {
    String k = e.key();
    Bits b = CACHE.get(k);
    if (b != null) {
      return b;
    }
    b = read(e, conf.value().value());
    if (CACHE.putIfAbsent(k, b) == null) {
      ORDER.add(k);
      CACHED.addAndGet(b.bytes);
      while (CACHED.get() > CACHE_BYTES) { // oldest first; a task keeps its own reference
        String old = ORDER.poll();
        if (old == null) {
          break;
        }
        Bits gone = CACHE.remove(old);
        if (gone != null) {
          CACHED.addAndGet(-gone.bytes);
        }
      }
    }
    return b;
  }

  /** The vector in the file of {@code e}, checked against the log and docs/FORMAT_DV.md. */
  static Bits read(Entry e, Configuration hadoop) {
    byte[] data = new byte[(int) e.size];
    Path p = new Path(e.path);
    try {
      FileSystem fs = p.getFileSystem(hadoop);
      try (FSDataInputStream in = fs.open(p)) {
        in.readFully(0, data);
        if (in.read(e.size, new byte[1], 0, 1) > 0) {
          throw bad(e, "longer than the " + e.size + " bytes the log says");
        }
      }
    } catch (java.io.EOFException x) {
      throw bad(e, "shorter than the " + e.size + " bytes the log says");
    } catch (java.io.FileNotFoundException x) {
      throw bad(e, "missing");
    } catch (IOException x) {
      throw new IllegalStateException("tablets: reading deletion vector " + e.path + " failed: " + x, x);
    }
    CRC32 crc = new CRC32();
    crc.update(data, 0, data.length);
    if ((int) crc.getValue() != e.crc) {
      throw bad(e, String.format("checksum %08x, the log says %08x", crc.getValue(), e.crc));
    }
    ByteBuffer buf = ByteBuffer.wrap(data);
    if (data.length < 21 || data[0] != 1 || buf.getInt(1) + 9 != data.length) {
      throw bad(e, "bad version byte or length field");
    }
    buf.order(ByteOrder.LITTLE_ENDIAN);
    if (buf.getInt(5) != MAGIC) {
      throw bad(e, "bad magic number");
    }
    try {
      buf.position(9);
      buf.limit(data.length - 4);
      long buckets = buf.getLong();
      if (buckets < 0 || buckets > (data.length - 17) / 4) {
        throw bad(e, "bad bucket count " + buckets);
      }
      int[] highs = new int[(int) buckets];
      RoaringBitmap[] lows = new RoaringBitmap[(int) buckets];
      long cardinality = 0;
      for (int i = 0; i < buckets; i++) {
        highs[i] = buf.getInt();
        RoaringBitmap bm = new RoaringBitmap();
        bm.deserialize(buf.slice().order(ByteOrder.LITTLE_ENDIAN));
        buf.position(buf.position() + bm.serializedSizeInBytes());
        lows[i] = bm;
        cardinality += bm.getLongCardinality();
      }
      if (buf.hasRemaining()) {
        throw bad(e, "trailing bytes after the bitmap");
      }
      if (cardinality != e.cardinality) {
        throw bad(e, cardinality + " rows, the log says " + e.cardinality);
      }
      return new Bits(highs, lows, data.length);
    } catch (IOException | RuntimeException x) {
      if (x instanceof IllegalStateException) {
        throw (IllegalStateException) x;
      }
      throw bad(e, "unreadable bitmap (" + x + ")");
    }
  }

  private static IllegalStateException bad(Entry e, String what) {
    return new IllegalStateException("tablets: deletion vector " + e.path + ": " + what);
  }

  /** The jar this class came from (for {@code SparkContext.addJar}), or null. */
  public static String jar() {
    java.security.CodeSource src = DeletionVectors.class.getProtectionDomain().getCodeSource();
    return src == null ? null : src.getLocation().toString();
  }

  /** For tests: drop every cached vector of this JVM. */
  public static void clearCache() {
    CACHE.clear();
    ORDER.clear();
    CACHED.set(0);
  }

  /** For tests and benchmarks: how many vectors this JVM holds. */
  public static int cached() {
    return CACHE.size();
  }

  static Map<String, Bits> cache() {
    return CACHE;
  }
}
