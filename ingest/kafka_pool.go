package ingest

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchPool lends franz-go the buffers it decodes fetched batches into.
// Without it, franz-go decompresses each batch into a buffer of its own
// and copies the result into a fresh slice (every record's bytes copied
// once more, a large allocation per batch), and it allocates a fresh
// slice of Records per batch, a whole kgo.Record struct per record,
// which the collector then scans. A batch's buffers come back when every record in
// it is recycled, which consume does once take has decoded them (rows and
// quarantined bytes are copies).
type fetchPool struct{}

// maxConcurrentFetches is how many fetches a Kafka run lets franz-go have
// in flight or buffered at once, over all brokers: enough that a broker
// with nothing new (which holds a fetch up to FetchMaxWait) does not
// stall the others.
const maxConcurrentFetches = 4

// fetchLimits are the client options that bound the memory of fetched
// batches (o with its defaults). Fetched batches wait in the client until
// polled, outside the sinks' budget: they are kept to an eighth of it.
// franz-go's FetchMaxBytes bounds one fetch, and it fetches from every
// broker at once unless MaxConcurrentFetches says otherwise, so the
// eighth is shared by at most maxConcurrentFetches fetches (fewer when it
// holds fewer than that many MiB; a fetch asks for 1 MiB at least, and
// 50 MiB, franz-go's default, at most).
//
// A broker answers with a record batch larger than FetchMaxBytes when it
// is the first one (so that the client makes progress); BrokerMaxReadBytes,
// the largest response the client reads, is franz-go's advised twice
// FetchMaxBytes plus one record at the size limit, so that a batch holding
// a record the run quarantines for its size is read, not refused.
func fetchLimits(o Options) []kgo.Opt {
	eighth := o.MemoryBudget / 8
	n := min(maxConcurrentFetches, max(1, eighth/(1<<20)))
	perFetch := min(50<<20, max(1<<20, eighth/n))
	readMax := min(1<<30, 2*perFetch+int64(o.MaxRecordBytes))
	return []kgo.Opt{
		kgo.MaxConcurrentFetches(int(n)),
		kgo.FetchMaxBytes(int32(perFetch)),
		kgo.BrokerMaxReadBytes(int32(readMax)),
	}
}

var (
	decompressBufs sync.Pool // *[]byte
	recordBufs     sync.Pool // *[]kgo.Record
)

func (fetchPool) GetDecompressBytes(compressed []byte, _ kgo.CompressionCodecType) []byte {
	if b, ok := decompressBufs.Get().(*[]byte); ok && cap(*b) >= 2*len(compressed) {
		return *b
	}
	return make([]byte, 0, 4*len(compressed))
}

func (fetchPool) PutDecompressBytes(b []byte) {
	b = b[:0]
	decompressBufs.Put(&b)
}

// GetRecords returns a slice of capacity n or more. franz-go sets every
// field of each record it decodes into it, and zeroes each on Recycle.
func (fetchPool) GetRecords(n int) []kgo.Record {
	if b, ok := recordBufs.Get().(*[]kgo.Record); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]kgo.Record, 0, n)
}

func (fetchPool) PutRecords(rs []kgo.Record) {
	rs = rs[:0]
	recordBufs.Put(&rs)
}
