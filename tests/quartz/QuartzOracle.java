// The oracle of tests/quartz_differential.rs: Java Quartz's own answer for a batch of cron
// expressions, one JVM for the whole batch.
//
// Input, one case per line:  ZONE <TAB> FROM (epoch milliseconds) <TAB> COUNT <TAB> EXPRESSION
// Output, one line per case: "OK <TAB> t1,t2,..." (the next COUNT fire instants in epoch
// milliseconds, fewer when Quartz returns null), "REFUSED <TAB> message" (ParseException), or
// "THREW <TAB> exception" (a runtime exception while searching), or "HUNG" (Quartz's search did
// not return within two seconds: some expressions make it loop forever).
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.text.ParseException;
import java.util.Date;
import java.util.TimeZone;
import org.quartz.CronExpression;

public final class QuartzOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", 4);
            String[] result = new String[1];
            Thread worker = new Thread(
                () -> result[0] = answer(parts[0], Long.parseLong(parts[1]), Integer.parseInt(parts[2]), parts[3]));
            worker.setDaemon(true);
            worker.start();
            worker.join(2000);
            if (worker.isAlive()) {
                stop(worker);
                result[0] = "HUNG";
            }
            out.write(result[0]);
            out.write('\n');
        }
        out.flush();
        System.exit(0);
    }

    /** Stops a search that loops forever, so that it does not slow down the cases after it. */
    @SuppressWarnings({"deprecation", "removal"})
    private static void stop(Thread worker) {
        try {
            worker.stop();
        } catch (Throwable unsupported) {
            // JDK 20 and later refuse Thread.stop: the daemon thread spins on until exit.
        }
    }

    private static String answer(String zone, long from, int count, String expression) {
        CronExpression cron;
        try {
            cron = new CronExpression(expression);
        } catch (ParseException e) {
            return "REFUSED\t" + oneLine(e.getMessage());
        } catch (RuntimeException e) {
            return "REFUSED\t" + oneLine(e.toString());
        }
        cron.setTimeZone(TimeZone.getTimeZone(zone));
        StringBuilder fires = new StringBuilder("OK\t");
        Date after = new Date(from);
        try {
            for (int i = 0; i < count; i++) {
                Date next = cron.getNextValidTimeAfter(after);
                if (next == null) {
                    break;
                }
                if (i > 0) {
                    fires.append(',');
                }
                fires.append(next.getTime());
                after = next;
            }
        } catch (RuntimeException e) {
            return "THREW\t" + oneLine(e.toString());
        }
        return fires.toString();
    }

    private static String oneLine(String message) {
        return String.valueOf(message).replace('\n', ' ').replace('\t', ' ');
    }
}
