package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluice-data/sluice/ingest"
)

// TestIngestKafkaKilledRunsExactlyOnce produces records over 4 partitions
// of an in-process broker, kills `sluice ingest` from the topic with
// SIGKILL at random moments, then lets one run finish: the table
// holds every record exactly once (rows and checksum equal those of a run
// that was never killed), and the quarantine every bad record once.
//
// Each killed run that had joined the consumer group stays a member until
// the group expires it, so the next runs wait for it and are killed
// waiting: this checks that the final run gets every partition back from
// dead members. Five kills show that as well as twenty; the static-member
// variant below is the one killed at every point of a run, twenty times.
func TestIngestKafkaKilledRunsExactlyOnce(t *testing.T) {
	killedKafkaRuns(t, 5)
}

// The same with a static group member: a run started again with the same
// --instance-id takes the killed run's partitions at once, so the killed
// runs read and commit, and are killed at every point of a run.
func TestIngestKafkaKilledStaticMemberExactlyOnce(t *testing.T) {
	killedKafkaRuns(t, 20, "--instance-id", "ingest-1")
}

func killedKafkaRuns(t *testing.T, kills int, extra ...string) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addrs := strings.Join(c.ListenAddrs(), ",")
	src := "kafka://" + addrs + "/events"
	p, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic("events"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n, bad = 50000, 25
	var rs []*kgo.Record
	for i := range n {
		v := fmt.Sprintf(`{"event_id":"6f1c3b9e-2a4d-4b8e-9c1f-%012d","list_id":%d,"tally":%d,"event_time":"2024-01-%02dT10:00:00Z"}`,
			i, i, i%7, 1+i%28)
		if i%(n/bad) == 0 {
			v = `{"event_id":"cat /etc/passwd","list_id":1,"tally":1,"event_time":"2024-01-01T00:00:00Z"}`
		}
		rs = append(rs, &kgo.Record{Value: []byte(v), Partition: int32(i % 4)})
	}
	if err := p.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	ref := filepath.Join(dir, "reference")
	initEvents(t, ref)
	s := summaryOf(t, mustSluice(t, "ingest", ref, "--from", src, "--json"))
	if s["records_in"] != float64(n) || s["rows_written"] != float64(n-bad) || s["records_quarantined"] != float64(bad) {
		t.Fatalf("reference run: %v", s)
	}
	if got := fmt.Sprint(s["kafka_partitions"]); got != "[0 1 2 3]" {
		t.Fatalf("reference run committed partitions %s, want [0 1 2 3] (the only member takes all 4)", got)
	}
	want := tableRead(t, ref)

	loc := filepath.Join(dir, "events")
	initEvents(t, loc)
	rng := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
	for i := range kills {
		err := killedRun(t, rng, 120*time.Millisecond, append([]string{"ingest", loc, "--from", src, "--max-records", fmt.Sprint(500 + rng.IntN(3000))}, extra...)...)
		t.Logf("run %d: %v; table at version %d", i, err, len(lines(mustSluice(t, "history", loc).stdout))-1)
	}
	if len(extra) == 0 {
		defer reapZombieMembers(t, p, ingest.DefaultGroup(loc))()
	}
	final := mustSluice(t, append([]string{"ingest", loc, "--from", src, "--verbose"}, extra...)...)
	got := tableRead(t, loc)
	if got.Rows != want.Rows || got.Checksum != want.Checksum {
		t.Fatalf("after kills: %d rows, checksum %s; want %d rows, checksum %s\nhistory:\n%s\nthe final run's log:\n%s",
			got.Rows, got.Checksum, want.Rows, want.Checksum, mustSluice(t, "history", loc, "--json").stdout, final.stderr)
	}
	if q := tableRead(t, loc+"_quarantine"); q.Rows != bad {
		t.Fatalf("quarantine holds %d rows, want %d (one per bad record, never twice)", q.Rows, bad)
	}
	s = summaryOf(t, mustSluice(t, append([]string{"ingest", loc, "--from", src, "--json"}, extra...)...))
	if s["records_in"] != 0.0 {
		t.Fatalf("a final rerun took records: %v", s)
	}
}

// reapZombieMembers works around a defect of kfake (at the version go.mod
// pins): a member killed while its JoinGroup waits is never expired once
// a live leader has synced the group. Its join reply goes to a dead
// connection, so its session timer is never armed, and the leader's sync
// cancels the timer that drops members that never sync. Kafka expires such
// a member after the session timeout; kfake keeps it, with partitions
// assigned, for good, and the final run rightly waits for it, then trusts
// it as alive once the group has been stable longer than a session.
//
// So that the final run meets dead members as it would on Kafka, the
// members of the group now (every one of them dead: no run is going) that
// are still there a second after a session timeout, when Kafka would have
// expired them, are removed then, as Kafka would. The final run's wait for
// dead members and its taking their partitions over are unchanged. The
// returned func, called once the final run is over, stops the reaper.
func reapZombieMembers(t *testing.T, cl *kgo.Client, group string) (wait func()) {
	t.Helper()
	adm := kadm.NewClient(cl)
	members := func() []string {
		gs, err := adm.DescribeGroups(context.Background(), group)
		if err != nil {
			return nil
		}
		var ids []string
		for _, m := range gs[group].Members {
			ids = append(ids, m.MemberID)
		}
		return ids
	}
	dead := members()
	done, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-time.After(ingest.KafkaSessionTimeout + time.Second):
		case <-stop: // the final run is over
			return
		}
		var stale []string
		for _, id := range members() {
			if slices.Contains(dead, id) {
				stale = append(stale, id)
			}
		}
		if len(stale) == 0 {
			return
		}
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group = group
		for _, id := range stale {
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = id
			req.Members = append(req.Members, m)
		}
		_, err := req.RequestWith(context.Background(), cl)
		t.Logf("removed %d member(s) kfake did not expire: %v (err %v)", len(stale), stale, err)
	}()
	return func() { close(stop); <-done }
}
