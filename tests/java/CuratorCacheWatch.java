// ElasticJob 3.0.x's view of a registry subtree: a Curator `CuratorCache` (what its
// ZookeeperRegistryCenter builds per job) on args[1] of the ensemble args[0]. Prints "ready" once
// the cache holds the subtree, then, at each line "report" on stdin, the events heard since the
// last report on one line ("events: TYPE path, ..."); exits at the end of stdin.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.retry.RetryOneTime;

public class CuratorCacheWatch {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(args[0], new RetryOneTime(100));
        client.start();
        client.blockUntilConnected();
        List<String> heard = new ArrayList<>();
        CountDownLatch initialized = new CountDownLatch(1);
        CuratorCache cache = CuratorCache.build(client, args[1]);
        cache.listenable().addListener(new CuratorCacheListener() {
            @Override
            public void event(Type type, org.apache.curator.framework.recipes.cache.ChildData before,
                    org.apache.curator.framework.recipes.cache.ChildData after) {
                String path = after != null ? after.getPath() : before.getPath();
                synchronized (heard) {
                    heard.add(type + " " + path);
                }
            }

            @Override
            public void initialized() {
                initialized.countDown();
            }
        });
        cache.start();
        initialized.await();
        synchronized (heard) {
            heard.clear();
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().equals("report")) {
                synchronized (heard) {
                    System.out.println("events: " + String.join(", ", heard));
                    heard.clear();
                }
                System.out.flush();
            }
        }
        cache.close();
        client.close();
    }
}
