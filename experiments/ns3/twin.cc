// The ns-3 twin of a testbed run (experiments/ns3/): compiled at run time by cppyy, one
// process per run. Python builds the network, the flows and the bottleneck's hooks from a
// RunSpec (experiments/ns3/network.py) and reads the counters back; the AQM itself is the
// golden model in Python, called from TwinQueueDisc for every packet it decides on.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace p4aqm_twin
{
using namespace ns3;

// ----- the bottleneck -------------------------------------------------------------------

// What the hook returns for a packet the AQM drops; otherwise the codepoint it leaves with.
constexpr int DROP = -1;

// The AQM's decision for one packet: (serial, queue, depth found, arrival us, sojourn us,
// depth left behind, arrival number, IP length, codepoint, flow, telemetry due) -> DROP or
// the codepoint. At departure the sojourn is the packet's own; at arrival it is the wait
// the packet will have (the queue ahead at the link's rate), and `last` the sojourn of the
// packet that left last.
using DecideHook = std::function<int(int port, int64_t serial, int queue, int qdepth,
                                     int64_t arrival_us, int64_t sojourn_us, int64_t last_us,
                                     int deq_qdepth, uint32_t arr_seq, uint32_t length, int ecn,
                                     uint32_t flow, bool telemetry)>;
// At arrival mode, a departing packet whose telemetry is due: (serial, sojourn us, depth
// left behind, now us).
using DepartHook = std::function<void(int port, int64_t serial, int64_t sojourn_us,
                                      int deq_qdepth, int64_t now_us)>;

// With ns-3's own queue disc deciding, a departing packet whose telemetry is due: (depth
// found, sojourn us, codepoint on arrival, now us).
using ChildHook =
    std::function<void(int port, int qdepth, int64_t sojourn_us, int ecn, int64_t now_us)>;

// What ns-3's own queue disc did (--factor aqm_impl=ns3), as the switch's counters count.
struct ChildCounts
{
    uint64_t received = 0; // packets it was handed
    uint64_t receivedBytes = 0;
    uint64_t probDrops = 0;
    uint64_t forcedDrops = 0;
    uint64_t overflowDrops = 0;
    uint64_t marks = 0;
};

// The queue disc of the bottleneck's egress: BMv2's rate-limited queue(s) in front of a
// link. It paces departures at the link's rate itself (the device behind it is a little
// faster, so it never queues), so a packet's sojourn is its wait for service, as BMv2's
// deq_timedelta. Two queues (DualPI2): ECT(1) and CE in the L queue, served first. Or, with
// a child (SetChild: ns-3's RED, CoDel or PIE), it only paces: the child decides, and
// `depart` hears of a departure whose telemetry is due.
class TwinQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4aqm_twin::TwinQueueDisc")
                                .SetParent<QueueDisc>()
                                .SetGroupName("TrafficControl")
                                .AddConstructor<TwinQueueDisc>();
        return tid;
    }

    TwinQueueDisc()
        : QueueDisc(QueueDiscSizePolicy::MULTIPLE_QUEUES)
    {
    }

    // bps: the link's rate for packets of its own size; buffer: each queue's depth (BMv2's
    // set_queue_depth; a full queue drops silently); at_arrival: the hook decides as a
    // packet arrives (the papers' AQMs) rather than as it leaves (the switch's egress);
    // slot_kept: a packet dropped at departure still takes its service time (BMv2).
    void Configure(double bps, uint32_t buffer, uint32_t lBuffer, bool dual, bool atArrival,
                   bool slotKept, double telemetryInterval)
    {
        m_bps = bps;
        m_buffer[0] = buffer;
        m_buffer[1] = lBuffer;
        m_dual = dual;
        m_atArrival = atArrival;
        m_slotKept = slotKept;
        m_telemetryInterval = Seconds(telemetryInterval);
        m_telemetryOn = telemetryInterval >= 0;
    }

    // The hooks are the network's, one of each for every port (a Python callable is slow
    // to convert, so each is converted once); `port` tells them which port calls.
    void Attach(int port, const DecideHook* decide, const DepartHook* depart)
    {
        m_port = port;
        m_decide = decide;
        m_depart = depart;
    }

    // ns-3's own queue disc `type` with these attributes decides instead of the hook;
    // `telemetry` hears of the departures whose telemetry is due.
    void SetChild(const std::string& type, std::vector<std::string> names,
                  std::vector<std::string> values, const ChildHook* telemetry)
    {
        ObjectFactory factory;
        factory.SetTypeId(type);
        for (size_t k = 0; k < names.size(); k++)
        {
            factory.Set(names[k], StringValue(values[k]));
        }
        m_child = factory.Create<QueueDisc>();
        m_childTelemetry = telemetry;
    }

    ChildCounts Counts() const
    {
        ChildCounts c;
        if (!m_child)
        {
            return c;
        }
        const QueueDisc::Stats& s = m_child->GetStats();
        c.received = s.nTotalReceivedPackets;
        c.receivedBytes = s.nTotalReceivedBytes;
        c.marks = s.nTotalMarkedPackets;
        for (const auto* reasons : {&s.nDroppedPacketsBeforeEnqueue, &s.nDroppedPacketsAfterDequeue})
        {
            for (const auto& [reason, n] : *reasons)
            {
                if (reason.find("Forced") != std::string::npos)
                {
                    c.forcedDrops += n;
                }
                else if (reason.find("limit") != std::string::npos ||
                         reason.find("Overlimit") != std::string::npos)
                {
                    c.overflowDrops += n;
                }
                else
                {
                    c.probDrops += n;
                }
            }
        }
        return c;
    }

    // A rate step: packets starting service from now on take size / bps each.
    void SetRate(double bps)
    {
        m_bps = bps;
    }

    double GetRate() const
    {
        return m_bps;
    }

    uint64_t enqueued = 0;  // arrivals handed to the queue (BMv2's enqueued counter)
    uint64_t tailDrops = 0; // of which a full queue dropped (BMv2's silent drops)
    uint64_t served = 0;    // packets that left for the link
    uint64_t servedBytes = 0; // and their bytes (IP)

    uint32_t Depth(int queue) const
    {
        return m_child ? m_child->GetNPackets() : GetInternalQueue(queue)->GetNPackets();
    }

  protected:
    struct Meta
    {
        int64_t serial;
        Time arrival;
        uint32_t qdepth;
        uint32_t arrSeq;
        uint32_t flow;
    };

    bool CheckConfig() override
    {
        if (m_child)
        {
            if (GetNQueueDiscClasses() == 0)
            {
                m_child->Initialize();
                Ptr<QueueDiscClass> only = CreateObject<QueueDiscClass>();
                only->SetQueueDisc(m_child);
                AddQueueDiscClass(only);
            }
            return m_bps > 0;
        }
        if (GetNInternalQueues() == 0)
        {
            for (int q = 0; q < (m_dual ? 2 : 1); q++)
            {
                AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
                    "MaxSize",
                    QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 1000000))));
            }
        }
        return m_decide != nullptr && *m_decide && m_bps > 0;
    }

    void InitializeParams() override
    {
    }

    static int EcnOf(Ptr<const QueueDiscItem> item)
    {
        auto ip = DynamicCast<const Ipv4QueueDiscItem>(item);
        return ip ? ip->GetHeader().GetEcn() : 0;
    }

    static void SetEcn(Ptr<QueueDiscItem> item, int ecn)
    {
        auto ip = DynamicCast<Ipv4QueueDiscItem>(item);
        if (ip && ip->GetHeader().GetEcn() != ecn)
        {
            // The header is written to the packet as it leaves (QueueDiscItem::AddHeader).
            const_cast<Ipv4Header&>(ip->GetHeader()).SetEcn(Ipv4Header::EcnType(ecn));
        }
    }

    static uint32_t FlowOf(Ptr<const QueueDiscItem> item);

    Time Service(Ptr<const QueueDiscItem> item) const
    {
        return Seconds(item->GetSize() * 8.0 / m_bps);
    }

    // When the server finishes what is queued now: the packet in service, then each one
    // queued ahead, in the order they will leave (the L queue first).
    Time Backlog(int queue) const
    {
        Time free = std::max(m_nextFree, Simulator::Now());
        for (int q = m_dual ? 1 : 0; q >= queue; q--)
        {
            // Only the queues served before or with this one come ahead of a new packet.
            free += m_queued[q];
        }
        return free - Simulator::Now();
    }

    bool TelemetryDue()
    {
        Time now = Simulator::Now();
        if (!m_telemetryOn || (m_exported && now - m_lastExport < m_telemetryInterval))
        {
            return false;
        }
        m_exported = true;
        m_lastExport = now;
        return true;
    }

    bool DoEnqueue(Ptr<QueueDiscItem> item) override
    {
        if (m_child)
        {
            return ChildEnqueue(item);
        }
        enqueued++;
        m_arrSeq++;
        int ecn = EcnOf(item);
        int queue = m_dual && (ecn == 1 || ecn == 3) ? 1 : 0;
        uint32_t depth = Depth(queue);
        if (depth >= m_buffer[queue])
        {
            tailDrops++;
            DropBeforeEnqueue(item, "buffer full");
            return false;
        }
        Meta meta{++m_serial, Simulator::Now(), depth, m_arrSeq, FlowOf(item)};
        if (m_atArrival)
        {
            int64_t wait = Backlog(queue).GetMicroSeconds();
            int out = (*m_decide)(m_port, meta.serial, queue, depth,
                                  Simulator::Now().GetMicroSeconds(),
                               wait, m_lastSojourn, depth, meta.arrSeq, item->GetSize(), ecn,
                               meta.flow, false);
            if (out == DROP)
            {
                DropBeforeEnqueue(item, "aqm");
                return false;
            }
            SetEcn(item, out);
        }
        GetInternalQueue(queue)->Enqueue(item);
        m_meta[queue].push_back(meta);
        m_queued[queue] += Service(item);
        return true;
    }

    bool ChildEnqueue(Ptr<QueueDiscItem> item)
    {
        enqueued++;
        m_arrSeq++;
        uint32_t depth = m_child->GetNPackets();
        if (depth >= m_buffer[0])
        {
            tailDrops++;
            DropBeforeEnqueue(item, "buffer full");
            return false;
        }
        // By the item: TCP's segments share their packet's uid (fragments of its buffer).
        QueueDiscItem* key = PeekPointer(item);
        m_arrivals[key] = Arrived{Simulator::Now(), depth, EcnOf(item)};
        if (!m_child->Enqueue(item))
        {
            m_arrivals.erase(key);
            return false;
        }
        m_queued[0] += Service(item);
        return true;
    }

    Ptr<QueueDiscItem> ChildDequeue()
    {
        Time now = Simulator::Now();
        if (m_child->GetNPackets() == 0)
        {
            return nullptr;
        }
        if (now < m_nextFree)
        {
            if (!m_wakeup.IsPending())
            {
                m_wakeup = Simulator::Schedule(m_nextFree - now, &QueueDisc::Run, this);
            }
            return nullptr;
        }
        Ptr<QueueDiscItem> item = m_child->Dequeue();
        if (!item)
        {
            return nullptr;    // it dropped what it held (CoDel)
        }
        auto meta = m_arrivals.find(PeekPointer(item));
        if (meta != m_arrivals.end())
        {
            if (m_childTelemetry && *m_childTelemetry && TelemetryDue())
            {
                (*m_childTelemetry)(m_port, meta->second.qdepth,
                                 (now - meta->second.arrival).GetMicroSeconds(),
                                 meta->second.ecn, now.GetMicroSeconds());
            }
            m_arrivals.erase(meta);
        }
        m_nextFree = now + Service(item);
        served++;
        servedBytes += item->GetSize();
        return item;
    }

    Ptr<QueueDiscItem> DoDequeue() override
    {
        if (m_child)
        {
            return ChildDequeue();
        }
        while (true)
        {
            Time now = Simulator::Now();
            int queue = m_dual && Depth(1) > 0 ? 1 : 0;
            if (Depth(queue) == 0)
            {
                return nullptr;
            }
            if (now < m_nextFree)
            {
                if (!m_wakeup.IsPending())
                {
                    m_wakeup = Simulator::Schedule(m_nextFree - now, &QueueDisc::Run, this);
                }
                return nullptr;
            }
            Ptr<QueueDiscItem> item = GetInternalQueue(queue)->Dequeue();
            Meta meta = m_meta[queue].front();
            m_meta[queue].pop_front();
            Time service = Service(item);
            m_queued[queue] -= service;
            if (Depth(queue) == 0)
            {
                m_queued[queue] = Time(0); // no rounding left over
            }
            int64_t sojourn = (now - meta.arrival).GetMicroSeconds();
            if (!m_atArrival)
            {
                int out = (*m_decide)(m_port, meta.serial, queue, meta.qdepth,
                                   meta.arrival.GetMicroSeconds(), sojourn, m_lastSojourn,
                                   Depth(queue), meta.arrSeq, item->GetSize(), EcnOf(item),
                                   meta.flow, TelemetryDue());
                if (out == DROP)
                {
                    if (m_slotKept)
                    {
                        m_nextFree = now + service;
                    }
                    DropAfterDequeue(item, "aqm");
                    continue;
                }
                SetEcn(item, out);
            }
            else if (m_depart && *m_depart && TelemetryDue())
            {
                (*m_depart)(m_port, meta.serial, sojourn, Depth(queue), now.GetMicroSeconds());
            }
            m_lastSojourn = sojourn;
            m_nextFree = now + service;
            served++;
            servedBytes += item->GetSize();
            return item;
        }
    }

  private:
    int m_port = 0;
    const DecideHook* m_decide = nullptr;
    const DepartHook* m_depart = nullptr;
    double m_bps = 0;
    uint32_t m_buffer[2] = {64, 64};
    bool m_dual = false;
    bool m_atArrival = false;
    bool m_slotKept = false;
    bool m_telemetryOn = false;
    bool m_exported = false;
    Time m_telemetryInterval;
    Time m_lastExport;
    Time m_nextFree;
    Time m_queued[2];
    EventId m_wakeup;
    int64_t m_serial = 0;
    int64_t m_lastSojourn = 0;
    uint32_t m_arrSeq = 0;
    std::deque<Meta> m_meta[2];
    Ptr<QueueDisc> m_child;
    const ChildHook* m_childTelemetry = nullptr;
    struct Arrived
    {
        Time arrival;
        uint32_t qdepth;
        int ecn;
    };

    // The child's packets (an entry of one it dropped stays until its address is reused).
    std::map<QueueDiscItem*, Arrived> m_arrivals;
};

NS_OBJECT_ENSURE_REGISTERED(TwinQueueDisc);

// A link's egress through a userspace delay line as the testbed's (topologies/delayline.py):
// each packet is held an extra time drawn from an exponential distribution (the line's
// thread late, on a busy core) and leaves in arrival order, so one late packet holds up
// those behind it, as the line's one releasing thread does. `limit` packets may wait for
// the device once due (the host's tbf queue); the held ones are the line's.
class JitterQueueDisc : public QueueDisc
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4aqm_twin::JitterQueueDisc")
                                .SetParent<QueueDisc>()
                                .SetGroupName("TrafficControl")
                                .AddConstructor<JitterQueueDisc>();
        return tid;
    }

    JitterQueueDisc()
        : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE)
    {
    }

    void Configure(uint32_t limit, double meanLate, int64_t stream)
    {
        m_limit = limit;
        m_late = CreateObject<ExponentialRandomVariable>();
        m_late->SetAttribute("Mean", DoubleValue(meanLate));
        m_late->SetStream(stream);
    }

  protected:
    bool CheckConfig() override
    {
        if (GetNInternalQueues() == 0)
        {
            AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
                "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 1000000))));
        }
        return m_late != nullptr && m_limit > 0;
    }

    void InitializeParams() override
    {
    }

    bool DoEnqueue(Ptr<QueueDiscItem> item) override
    {
        Time now = Simulator::Now();
        // The release times never decrease: those due are a prefix.
        auto due = std::upper_bound(m_release.begin(), m_release.end(), now) - m_release.begin();
        if (uint32_t(due) >= m_limit)
        {
            DropBeforeEnqueue(item, "limit");
            return false;
        }
        Time release = std::max(m_lastRelease, now + Seconds(m_late->GetValue()));
        m_release.push_back(release);
        m_lastRelease = release;
        GetInternalQueue(0)->Enqueue(item);
        return true;
    }

    Ptr<QueueDiscItem> DoDequeue() override
    {
        if (m_release.empty())
        {
            return nullptr;
        }
        Time now = Simulator::Now();
        if (now < m_release.front())
        {
            if (!m_wakeup.IsPending())
            {
                m_wakeup = Simulator::Schedule(m_release.front() - now, &QueueDisc::Run, this);
            }
            return nullptr;
        }
        m_release.pop_front();
        return GetInternalQueue(0)->Dequeue();
    }

  private:
    uint32_t m_limit = 0;
    Ptr<ExponentialRandomVariable> m_late;
    std::deque<Time> m_release;
    Time m_lastRelease;
    EventId m_wakeup;
};

NS_OBJECT_ENSURE_REGISTERED(JitterQueueDisc);

// ----- flows --------------------------------------------------------------------------------

// The flow a segment belongs to, on every byte a twin sender writes (a byte tag, so TCP's
// segments and retransmissions carry it); 0 for anything else.
class FlowTag : public Tag
{
  public:
    uint32_t flow = 0;

    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("p4aqm_twin::FlowTag").SetParent<Tag>().AddConstructor<FlowTag>();
        return tid;
    }

    TypeId GetInstanceTypeId() const override
    {
        return GetTypeId();
    }

    uint32_t GetSerializedSize() const override
    {
        return 4;
    }

    void Serialize(TagBuffer i) const override
    {
        i.WriteU32(flow);
    }

    void Deserialize(TagBuffer i) override
    {
        flow = i.ReadU32();
    }

    void Print(std::ostream& os) const override
    {
        os << "flow=" << flow;
    }
};

uint32_t TwinQueueDisc::FlowOf(Ptr<const QueueDiscItem> item)
{
    FlowTag tag;
    return item->GetPacket()->FindFirstMatchingByteTag(tag) ? tag.flow : 0;
}

// One TCP connection's sender, as one iperf3 stream: it writes as fast as the socket takes
// until its stop time, then closes. Counts what it put on the wire.
class TcpSource : public Application
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4aqm_twin::TcpSource")
                                .SetParent<Application>()
                                .AddConstructor<TcpSource>();
        return tid;
    }

    void Setup(Address peer, TypeId congestion, uint32_t flow, double stop,
               std::map<std::string, std::string> attributes)
    {
        m_peer = peer;
        m_congestion = congestion;
        m_flow = flow;
        m_stopWriting = Seconds(stop);
        m_attributes = attributes;
    }

    uint64_t written = 0;     // bytes handed to TCP
    uint64_t wire = 0;        // payload bytes sent, retransmissions included
    uint64_t retransmits = 0; // segments sent again
    uint64_t highest = 0;     // highest sequence number sent, bytes
    uint16_t localPort = 0;
    double connectedAt = -1;
    double closedAt = -1;
    bool failed = false;

    Ptr<Socket> GetSocket() const
    {
        return m_socket;
    }

    // The sender's smoothed RTT (what seed 002's senders write into the header), us.
    int64_t SrttUs() const
    {
        return m_srtt.GetMicroSeconds();
    }

  private:
    void StartApplication() override
    {
        auto tcp = GetNode()->GetObject<TcpL4Protocol>();
        m_socket = tcp->CreateSocket(m_congestion);
        for (auto& [name, value] : m_attributes)
        {
            m_socket->SetAttribute(name, StringValue(value));
        }
        m_socket->TraceConnectWithoutContext("Tx", MakeCallback(&TcpSource::Sent, this));
        m_socket->TraceConnectWithoutContext("Retransmission",
                                             MakeCallback(&TcpSource::Resent, this));
        m_socket->TraceConnectWithoutContext("HighestSequence",
                                             MakeCallback(&TcpSource::Highest, this));
        m_socket->TraceConnectWithoutContext("RTT", MakeCallback(&TcpSource::Rtt, this));
        m_socket->Bind();
        m_socket->Connect(m_peer);
        m_socket->SetConnectCallback(MakeCallback(&TcpSource::Connected, this),
                                     MakeCallback(&TcpSource::Refused, this));
        m_socket->SetSendCallback(MakeCallback(&TcpSource::Room, this));
        m_socket->SetCloseCallbacks(MakeCallback(&TcpSource::Closed, this),
                                    MakeCallback(&TcpSource::Closed, this));
        Simulator::Schedule(m_stopWriting - Simulator::Now(), &TcpSource::StopWriting, this);
    }

    void StopApplication() override
    {
    }

    void Connected(Ptr<Socket> socket)
    {
        connectedAt = Simulator::Now().GetSeconds();
        InetSocketAddress local = InetSocketAddress::ConvertFrom(LocalAddress());
        localPort = local.GetPort();
        Fill();
    }

    Address LocalAddress() const
    {
        Address a;
        m_socket->GetSockName(a);
        return a;
    }

    void Refused(Ptr<Socket> socket)
    {
        failed = true;
    }

    void Room(Ptr<Socket> socket, uint32_t available)
    {
        Fill();
    }

    void Fill()
    {
        if (m_writingDone || connectedAt < 0)
        {
            return;
        }
        while (m_socket->GetTxAvailable() > 0)
        {
            uint32_t n = std::min<uint32_t>(m_socket->GetTxAvailable(), 64 * 1024);
            Ptr<Packet> data = Create<Packet>(n);
            FlowTag tag;
            tag.flow = m_flow;
            data->AddByteTag(tag);
            int sent = m_socket->Send(data);
            if (sent <= 0)
            {
                return;
            }
            written += sent;
        }
    }

    void StopWriting()
    {
        m_writingDone = true;
        m_socket->Close();
    }

    void Sent(Ptr<const Packet> packet, const TcpHeader& header, Ptr<const TcpSocketBase> s)
    {
        wire += packet->GetSize();
    }

    void Resent(Ptr<const Packet> packet, const TcpHeader& header, const Address& from,
                const Address& to, Ptr<const TcpSocketBase> s)
    {
        retransmits++;
    }

    void Highest(SequenceNumber32 old, SequenceNumber32 now)
    {
        highest = now.GetValue() > 0 ? now.GetValue() - 1 : 0; // after the SYN's number
    }

    void Rtt(Time old, Time now)
    {
        m_srtt = now;
    }

    void Closed(Ptr<Socket> socket)
    {
        closedAt = Simulator::Now().GetSeconds();
    }

    Ptr<Socket> m_socket;
    Address m_peer;
    TypeId m_congestion;
    uint32_t m_flow = 0;
    bool m_writingDone = false;
    Time m_stopWriting;
    Time m_srtt;
    std::map<std::string, std::string> m_attributes;
};

// An iperf3 server's side of a flow: one listening socket, every connection it accepts
// counted by the client's port.
class TcpSink : public Application
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("p4aqm_twin::TcpSink").SetParent<Application>().AddConstructor<TcpSink>();
        return tid;
    }

    void Setup(uint16_t port, TypeId congestion, std::map<std::string, std::string> attributes)
    {
        m_port = port;
        m_congestion = congestion;
        m_attributes = attributes;
    }

    std::map<uint16_t, uint64_t> received; // client port -> bytes

    uint64_t ReceivedFrom(uint16_t port) const
    {
        auto it = received.find(port);
        return it == received.end() ? 0 : it->second;
    }

  private:
    void StartApplication() override
    {
        auto tcp = GetNode()->GetObject<TcpL4Protocol>();
        m_socket = tcp->CreateSocket(m_congestion);
        for (auto& [name, value] : m_attributes)
        {
            m_socket->SetAttribute(name, StringValue(value));
        }
        m_socket->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
        m_socket->Listen();
        m_socket->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                    MakeCallback(&TcpSink::Accepted, this));
    }

    void StopApplication() override
    {
    }

    void Accepted(Ptr<Socket> socket, const Address& from)
    {
        uint16_t port = InetSocketAddress::ConvertFrom(from).GetPort();
        received[port] = 0;
        m_ports[PeekPointer(socket)] = port;
        m_accepted.push_back(socket);
        socket->SetRecvCallback(MakeCallback(&TcpSink::Receive, this));
    }

    void Receive(Ptr<Socket> socket)
    {
        uint16_t port = m_ports[PeekPointer(socket)];
        while (Ptr<Packet> p = socket->Recv())
        {
            if (p->GetSize() == 0)
            {
                break;
            }
            received[port] += p->GetSize();
        }
    }

    Ptr<Socket> m_socket;
    uint16_t m_port = 0;
    TypeId m_congestion;
    std::map<std::string, std::string> m_attributes;
    std::map<Socket*, uint16_t> m_ports;
    std::vector<Ptr<Socket>> m_accepted;
};

// Seed 004's server: every connection it accepts gets `size` bytes, then a FIN.
class TransferServer : public Application
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4aqm_twin::TransferServer")
                                .SetParent<Application>()
                                .AddConstructor<TransferServer>();
        return tid;
    }

    void Setup(uint16_t port, uint32_t size, TypeId congestion,
               std::map<std::string, std::string> attributes)
    {
        m_port = port;
        m_size = size;
        m_congestion = congestion;
        m_attributes = attributes;
    }

    uint64_t retransmits = 0; // segments sent again, over every connection

  private:
    void StartApplication() override
    {
        auto tcp = GetNode()->GetObject<TcpL4Protocol>();
        m_socket = tcp->CreateSocket(m_congestion);
        for (auto& [name, value] : m_attributes)
        {
            m_socket->SetAttribute(name, StringValue(value));
        }
        m_socket->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
        m_socket->Listen();
        m_socket->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                    MakeCallback(&TransferServer::Accepted, this));
    }

    void StopApplication() override
    {
    }

    void Accepted(Ptr<Socket> socket, const Address& from)
    {
        m_left[PeekPointer(socket)] = m_size;
        m_open.push_back(socket);
        socket->TraceConnectWithoutContext("Retransmission",
                                           MakeCallback(&TransferServer::Resent, this));
        socket->SetSendCallback(MakeCallback(&TransferServer::Room, this));
        socket->SetRecvCallback(MakeCallback(&TransferServer::Discard, this));
        Room(socket, socket->GetTxAvailable());
    }

    void Room(Ptr<Socket> socket, uint32_t available)
    {
        uint32_t& left = m_left[PeekPointer(socket)];
        while (left > 0 && socket->GetTxAvailable() > 0)
        {
            uint32_t n = std::min(left, socket->GetTxAvailable());
            int sent = socket->Send(Create<Packet>(n));
            if (sent <= 0)
            {
                return;
            }
            left -= sent;
            if (left == 0)
            {
                socket->Close();
            }
        }
    }

    void Discard(Ptr<Socket> socket)
    {
        while (socket->Recv())
        {
        }
    }

    void Resent(Ptr<const Packet> packet, const TcpHeader& header, const Address& from,
                const Address& to, Ptr<const TcpSocketBase> s)
    {
        retransmits++;
    }

    Ptr<Socket> m_socket;
    uint16_t m_port = 0;
    uint32_t m_size = 0;
    TypeId m_congestion;
    std::map<std::string, std::string> m_attributes;
    std::map<Socket*, uint32_t> m_left;
    std::vector<Ptr<Socket>> m_open;
};

// Seed 004's client: `count` transfers one after the other, each a new connection that
// ends when the server's FIN arrives; each transfer's time from its connect to that FIN.
class TransferClient : public Application
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4aqm_twin::TransferClient")
                                .SetParent<Application>()
                                .AddConstructor<TransferClient>();
        return tid;
    }

    void Setup(Address server, uint32_t count, uint32_t size, TypeId congestion,
               std::map<std::string, std::string> attributes)
    {
        m_server = server;
        m_count = count;
        m_size = size;
        m_congestion = congestion;
        m_attributes = attributes;
    }

    std::vector<double> seconds; // each finished transfer's time (-1: not finished)
    std::vector<uint64_t> bytes;

    bool Done() const
    {
        return seconds.size() == m_count && (seconds.empty() || seconds.back() >= 0);
    }

  private:
    void StartApplication() override
    {
        Next();
    }

    void StopApplication() override
    {
    }

    void Next()
    {
        if (seconds.size() == m_count)
        {
            return;
        }
        seconds.push_back(-1);
        bytes.push_back(0);
        m_began = Simulator::Now();
        auto tcp = GetNode()->GetObject<TcpL4Protocol>();
        m_socket = tcp->CreateSocket(m_congestion);
        for (auto& [name, value] : m_attributes)
        {
            m_socket->SetAttribute(name, StringValue(value));
        }
        m_socket->Bind();
        m_socket->SetRecvCallback(MakeCallback(&TransferClient::Receive, this));
        m_socket->SetCloseCallbacks(MakeCallback(&TransferClient::Finished, this),
                                    MakeCallback(&TransferClient::Finished, this));
        m_socket->Connect(m_server);
    }

    void Receive(Ptr<Socket> socket)
    {
        while (Ptr<Packet> p = socket->Recv())
        {
            if (p->GetSize() == 0)
            {
                break;
            }
            bytes.back() += p->GetSize();
        }
    }

    void Finished(Ptr<Socket> socket)
    {
        if (socket != m_socket || seconds.back() >= 0)
        {
            return;
        }
        Receive(socket);
        seconds.back() = (Simulator::Now() - m_began).GetSeconds();
        m_socket->Close();
        m_done.push_back(m_socket);
        Simulator::ScheduleNow(&TransferClient::Next, this);
    }

    Ptr<Socket> m_socket;
    Address m_server;
    uint32_t m_count = 0;
    uint32_t m_size = 0;
    Time m_began;
    TypeId m_congestion;
    std::map<std::string, std::string> m_attributes;
    std::vector<Ptr<Socket>> m_done;
};

// ----- the userspace transport's ends (transport/), over UDP --------------------------------

// A segment of the userspace transport: its flow, number and whether it is the FIN.
class SegmentTag : public Tag
{
  public:
    uint32_t flow = 0, seq = 0;
    uint8_t fin = 0;

    static TypeId GetTypeId()
    {
        static TypeId tid =
            TypeId("p4aqm_twin::SegmentTag").SetParent<Tag>().AddConstructor<SegmentTag>();
        return tid;
    }

    TypeId GetInstanceTypeId() const override
    {
        return GetTypeId();
    }

    uint32_t GetSerializedSize() const override
    {
        return 9;
    }

    void Serialize(TagBuffer i) const override
    {
        i.WriteU32(flow);
        i.WriteU32(seq);
        i.WriteU8(fin);
    }

    void Deserialize(TagBuffer i) override
    {
        flow = i.ReadU32();
        seq = i.ReadU32();
        fin = i.ReadU8();
    }

    void Print(std::ostream& os) const override
    {
        os << "seq=" << seq;
    }
};

// An ACK of the userspace transport (transport/wire.py's fields).
class AckTag : public Tag
{
  public:
    uint32_t flow = 0, ack = 0, echo = 0, ce = 0;
    uint8_t level = 0;

    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4aqm_twin::AckTag").SetParent<Tag>().AddConstructor<AckTag>();
        return tid;
    }

    TypeId GetInstanceTypeId() const override
    {
        return GetTypeId();
    }

    uint32_t GetSerializedSize() const override
    {
        return 17;
    }

    void Serialize(TagBuffer i) const override
    {
        i.WriteU32(flow);
        i.WriteU32(ack);
        i.WriteU32(echo);
        i.WriteU32(ce);
        i.WriteU8(level);
    }

    void Deserialize(TagBuffer i) override
    {
        flow = i.ReadU32();
        ack = i.ReadU32();
        echo = i.ReadU32();
        ce = i.ReadU32();
        level = i.ReadU8();
    }

    void Print(std::ostream& os) const override
    {
        os << "ack=" << ack;
    }
};

// The sender's socket and clock; its logic is transport/'s, in Python: `step` is called
// at the start, for every ACK and when the armed timer expires, and answers by calling
// Send and Arm. kind: 0 start, 1 ACK (ack, level, echo, ce), 2 timer.
using SenderHook = std::function<void(uint32_t flow, int kind, double now, uint32_t ack,
                                      int level, uint32_t echo, uint32_t ce)>;

class UdpSender : public Application
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4aqm_twin::UdpSender")
                                .SetParent<Application>()
                                .AddConstructor<UdpSender>();
        return tid;
    }

    void Setup(Address peer, uint32_t flow, uint32_t packetBytes, uint8_t tos,
               const SenderHook* hook)
    {
        m_peer = peer;
        m_flow = flow;
        m_packetBytes = packetBytes;
        m_tos = tos;
        m_hook = hook;
    }

    // A segment out now (the FIN is header only).
    void Send(uint32_t seq, bool fin)
    {
        Ptr<Packet> p = Create<Packet>(fin ? 12 : m_packetBytes - 28);
        SegmentTag tag;
        tag.flow = m_flow;
        tag.seq = seq;
        tag.fin = fin;
        p->AddPacketTag(tag);
        FlowTag flow;
        flow.flow = m_flow;
        p->AddByteTag(flow);
        m_socket->Send(p);
    }

    // The timer at `at` seconds (simulation time); a negative time disarms it. It fires
    // a nanosecond after `at` at the earliest: never at a moment the hook may still read as
    // before `at` (the double's rounding), which would arm it again for the same moment.
    void Arm(double at)
    {
        m_timer.Cancel();
        if (at >= 0)
        {
            Time when = std::max(Seconds(at), Simulator::Now()) + NanoSeconds(1);
            m_timer = Simulator::Schedule(when - Simulator::Now(), &UdpSender::Expired, this);
        }
    }

    double Now() const
    {
        return Simulator::Now().GetSeconds();
    }

  private:
    void StartApplication() override
    {
        m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_socket->SetIpTos(m_tos);
        m_socket->Bind();
        m_socket->Connect(m_peer);
        m_socket->SetRecvCallback(MakeCallback(&UdpSender::Receive, this));
        (*m_hook)(m_flow, 0, Now(), 0, 0, 0, 0);
    }

    void StopApplication() override
    {
        m_timer.Cancel();
    }

    void Receive(Ptr<Socket> socket)
    {
        while (Ptr<Packet> p = socket->Recv())
        {
            AckTag ack;
            if (p->PeekPacketTag(ack) && ack.flow == m_flow)
            {
                (*m_hook)(m_flow, 1, Now(), ack.ack, ack.level, ack.echo, ack.ce);
            }
        }
    }

    void Expired()
    {
        (*m_hook)(m_flow, 2, Now(), 0, 0, 0, 0);
    }

    Ptr<Socket> m_socket;
    Address m_peer;
    uint32_t m_flow = 0;
    uint32_t m_packetBytes = 1500;
    uint8_t m_tos = 0;
    const SenderHook* m_hook = nullptr;
    EventId m_timer;
};

// The receiver: each segment with its codepoint to `hook` (seq, payload bytes, codepoint,
// fin, now), which answers with Ack.
using ReceiverHook = std::function<void(uint32_t flow, uint32_t seq, uint32_t payload, int ecn,
                                        bool fin, double now)>;

class UdpReceiver : public Application
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4aqm_twin::UdpReceiver")
                                .SetParent<Application>()
                                .AddConstructor<UdpReceiver>();
        return tid;
    }

    void Setup(uint16_t port, uint32_t flow, const ReceiverHook* hook)
    {
        m_port = port;
        m_flow = flow;
        m_hook = hook;
    }

    // An ACK to the sender of the segment being handled (48-byte IP packets, as wire.py's).
    void Ack(uint32_t ack, uint32_t echo, int level, uint32_t ce)
    {
        Ptr<Packet> p = Create<Packet>(20);
        AckTag tag;
        tag.flow = m_flow;
        tag.ack = ack;
        tag.echo = echo;
        tag.level = level;
        tag.ce = ce;
        p->AddPacketTag(tag);
        m_socket->SendTo(p, 0, m_from);
    }

  private:
    void StartApplication() override
    {
        m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_socket->SetIpRecvTos(true);
        m_socket->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
        m_socket->SetRecvCallback(MakeCallback(&UdpReceiver::Receive, this));
    }

    void StopApplication() override
    {
    }

    void Receive(Ptr<Socket> socket)
    {
        Address from;
        while (Ptr<Packet> p = socket->RecvFrom(from))
        {
            SegmentTag seg;
            if (!p->PeekPacketTag(seg) || seg.flow != m_flow)
            {
                continue;
            }
            SocketIpTosTag tos;
            int ecn = p->PeekPacketTag(tos) ? (tos.GetTos() & 3) : 0;
            m_from = from;
            (*m_hook)(m_flow, seg.seq, seg.fin ? 0 : p->GetSize(), ecn, seg.fin,
                      Simulator::Now().GetSeconds());
        }
    }

    Ptr<Socket> m_socket;
    uint16_t m_port = 0;
    uint32_t m_flow = 0;
    const ReceiverHook* m_hook = nullptr;
    Address m_from;
};

// ----- a packet trace (the tests' input) -------------------------------------------------------

// UDP packets at given times (ns), of given IP sizes and codepoints, numbered by a
// SegmentTag: the bottleneck sees exactly this arrival process when the sender runs on the
// node in front of it.
class TraceSender : public Application
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4aqm_twin::TraceSender")
                                .SetParent<Application>()
                                .AddConstructor<TraceSender>();
        return tid;
    }

    void Setup(Address peer, std::vector<int64_t> timesNs, std::vector<uint32_t> sizes,
               std::vector<uint8_t> ecn)
    {
        m_peer = peer;
        m_times = timesNs;
        m_sizes = sizes;
        m_ecn = ecn;
    }

  private:
    void StartApplication() override
    {
        m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_socket->Bind();
        m_socket->Connect(m_peer);
        for (size_t k = 0; k < m_times.size(); k++)
        {
            Simulator::Schedule(NanoSeconds(m_times[k]) - Simulator::Now(), &TraceSender::Send,
                                this, k);
        }
    }

    void StopApplication() override
    {
    }

    void Send(size_t k)
    {
        Ptr<Packet> p = Create<Packet>(m_sizes[k] - 28);
        SegmentTag tag;
        tag.seq = k;
        p->AddPacketTag(tag);
        m_socket->SetIpTos(m_ecn[k]);
        m_socket->Send(p);
    }

    Ptr<Socket> m_socket;
    Address m_peer;
    std::vector<int64_t> m_times;
    std::vector<uint32_t> m_sizes;
    std::vector<uint8_t> m_ecn;
};

// What a trace's receiver got: each packet's number, arrival time (ns) and codepoint.
class TraceReceiver : public Application
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("p4aqm_twin::TraceReceiver")
                                .SetParent<Application>()
                                .AddConstructor<TraceReceiver>();
        return tid;
    }

    void Setup(uint16_t port)
    {
        m_port = port;
    }

    std::vector<uint32_t> seq;
    std::vector<int64_t> atNs;
    std::vector<int> ecn;

  private:
    void StartApplication() override
    {
        m_socket = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());
        m_socket->SetIpRecvTos(true);
        m_socket->Bind(InetSocketAddress(Ipv4Address::GetAny(), m_port));
        m_socket->SetRecvCallback(MakeCallback(&TraceReceiver::Receive, this));
    }

    void StopApplication() override
    {
    }

    void Receive(Ptr<Socket> socket)
    {
        while (Ptr<Packet> p = socket->Recv())
        {
            SegmentTag tag;
            SocketIpTosTag tos;
            if (p->PeekPacketTag(tag))
            {
                seq.push_back(tag.seq);
                atNs.push_back(Simulator::Now().GetNanoSeconds());
                ecn.push_back(p->PeekPacketTag(tos) ? tos.GetTos() & 3 : -1);
            }
        }
    }

    Ptr<Socket> m_socket;
    uint16_t m_port = 0;
};

// ----- the network --------------------------------------------------------------------------

// A host's TCP segments, counted as Linux's /proc/net/snmp does: sent (retransmissions
// counted apart by the sockets), received.
struct SegmentCounts
{
    uint64_t out = 0;
    uint64_t in = 0;
};

class Network
{
  public:
    Network(uint32_t seed, uint32_t run)
    {
        RngSeedManager::SetSeed(seed);
        RngSeedManager::SetRun(run);
        m_internet.SetIpv6StackInstall(false);
    }

    uint32_t AddNode()
    {
        Ptr<Node> node = CreateObject<Node>();
        m_internet.Install(node);
        m_nodes.push_back(node);
        m_segments.emplace_back();
        uint32_t index = m_nodes.size() - 1;
        auto ip = node->GetObject<Ipv4L3Protocol>();
        ip->TraceConnectWithoutContext(
            "Tx", MakeBoundCallback(&Network::CountOut, &m_segments[index]));
        ip->TraceConnectWithoutContext(
            "Rx", MakeBoundCallback(&Network::CountIn, &m_segments[index]));
        return index;
    }

    // A link of `bps` (the device's rate) and one-way `delay` s; each end's egress queue
    // holds `queue` packets (FIFO); `loss` drops that fraction of the packets arriving at b
    // (and `lossBack` at a), at random; `jitter` > 0: each end's egress is a delay line's,
    // each packet late by `jitter` s on average (JitterQueueDisc). Returns the link's index.
    uint32_t AddLink(uint32_t a, uint32_t b, double bps, double delay, uint32_t queue,
                     double loss, double lossBack, double jitter = 0)
    {
        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(bps))));
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(delay)));
        p2p.SetQueue("ns3::DropTailQueue", "MaxSize",
                     QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 1)));
        NetDeviceContainer devices = p2p.Install(m_nodes[a], m_nodes[b]);
        if (jitter > 0)
        {
            for (uint32_t end = 0; end < 2; end++)
            {
                TrafficControlHelper line;
                line.SetRootQueueDisc("p4aqm_twin::JitterQueueDisc");
                Ptr<JitterQueueDisc> disc =
                    DynamicCast<JitterQueueDisc>(line.Install(devices.Get(end)).Get(0));
                disc->Configure(queue, jitter, m_streams++);
            }
        }
        else
        {
            TrafficControlHelper fifo;
            fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                                  QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, queue)));
            fifo.Install(devices);
        }
        Lossy(devices.Get(1), loss);
        Lossy(devices.Get(0), lossBack);
        m_links.push_back(devices);
        return m_links.size() - 1;
    }

    // The bottleneck `port` (the hooks' number for it): a link whose a-side egress is a
    // TwinQueueDisc (returned); the device runs a little faster than the disc paces, so
    // only the disc queues. `back` holds the other direction's FIFO.
    TwinQueueDisc* AddBottleneck(uint32_t a, uint32_t b, double bps, double delay,
                                 uint32_t back, int port)
    {
        PointToPointHelper p2p;
        // 2 bytes of PPP header per packet, and a margin: the device is never the queue.
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(uint64_t(bps * 1.01 + 1e4))));
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(delay)));
        p2p.SetQueue("ns3::DropTailQueue", "MaxSize",
                     QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 1)));
        NetDeviceContainer devices = p2p.Install(m_nodes[a], m_nodes[b]);
        TrafficControlHelper twin;
        twin.SetRootQueueDisc("p4aqm_twin::TwinQueueDisc");
        QueueDiscContainer discs = twin.Install(devices.Get(0));
        TrafficControlHelper fifo;
        fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
                              QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, back)));
        fifo.Install(devices.Get(1));
        m_links.push_back(devices);
        m_bottleneckDevices.push_back(DynamicCast<PointToPointNetDevice>(devices.Get(0)));
        Ptr<TwinQueueDisc> disc = DynamicCast<TwinQueueDisc>(discs.Get(0));
        disc->Attach(port, &m_hooks.decide, &m_hooks.depart);
        m_discs.push_back(disc);
        return PeekPointer(disc);
    }

    // A capture of what leaves bottleneck `port` for its link, in PPP framing as ns-3's
    // point-to-point links carry it (Wireshark reads it): the first `packets` packets,
    // `snaplen` bytes of each.
    void Capture(int port, const std::string& filename, uint32_t packets, uint32_t snaplen)
    {
        PcapHelper pcap;
        Ptr<PcapFileWrapper> file =
            pcap.CreateFile(filename, std::ios::out, PcapHelper::DLT_PPP, snaplen);
        m_captures.push_back(Capture_{file, packets});
        m_bottleneckDevices[port]->TraceConnectWithoutContext(
            "MacTx", MakeBoundCallback(&Network::Captured, &m_captures.back()));
    }

    // ns-3's own queue disc deciding at a bottleneck (aqm_impl=ns3).
    void UseChild(TwinQueueDisc* disc, const std::string& type, std::vector<std::string> names,
                  std::vector<std::string> values)
    {
        disc->SetChild(type, names, values, &m_hooks.child);
    }

    // Addresses (one /24 per link) and routes; call once, after the last link.
    void AssignAddresses()
    {
        Ipv4AddressHelper addresses;
        for (size_t k = 0; k < m_links.size(); k++)
        {
            std::string base = "10." + std::to_string(1 + k / 250) + "." +
                               std::to_string(k % 250) + ".0";
            addresses.SetBase(base.c_str(), "255.255.255.0");
            m_interfaces.push_back(addresses.Assign(m_links[k]));
        }
        Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    }

    // A node's address: its first link's.
    Ipv4Address AddressOf(uint32_t node) const
    {
        auto ip = m_nodes[node]->GetObject<Ipv4>();
        return ip->GetAddress(1, 0).GetLocal();
    }

    std::string AddressText(uint32_t node) const
    {
        std::ostringstream out;
        AddressOf(node).Print(out);
        return out.str();
    }

    TcpSink* AddSink(uint32_t node, uint16_t port, const std::string& congestion,
                     std::map<std::string, std::string> attributes)
    {
        Ptr<TcpSink> sink = CreateObject<TcpSink>();
        sink->Setup(port, TypeId::LookupByName(congestion), attributes);
        m_nodes[node]->AddApplication(sink);
        sink->SetStartTime(Seconds(0));
        return PeekPointer(sink);
    }

    TcpSource* AddSource(uint32_t node, uint32_t to, uint16_t port, const std::string& congestion,
                         uint32_t flow, double start, double stop,
                         std::map<std::string, std::string> attributes)
    {
        Ptr<TcpSource> source = CreateObject<TcpSource>();
        source->Setup(InetSocketAddress(AddressOf(to), port), TypeId::LookupByName(congestion),
                      flow, stop, attributes);
        m_nodes[node]->AddApplication(source);
        source->SetStartTime(Seconds(start));
        return PeekPointer(source);
    }

    TransferServer* AddTransferServer(uint32_t node, uint16_t port, uint32_t size,
                                      const std::string& congestion,
                                      std::map<std::string, std::string> attributes)
    {
        Ptr<TransferServer> server = CreateObject<TransferServer>();
        server->Setup(port, size, TypeId::LookupByName(congestion), attributes);
        m_nodes[node]->AddApplication(server);
        server->SetStartTime(Seconds(0));
        return PeekPointer(server);
    }

    TransferClient* AddTransferClient(uint32_t node, uint32_t server, uint16_t port,
                                      uint32_t count, uint32_t size, double start,
                                      const std::string& congestion,
                                      std::map<std::string, std::string> attributes)
    {
        Ptr<TransferClient> client = CreateObject<TransferClient>();
        client->Setup(InetSocketAddress(AddressOf(server), port), count, size,
                      TypeId::LookupByName(congestion), attributes);
        m_nodes[node]->AddApplication(client);
        client->SetStartTime(Seconds(start));
        return PeekPointer(client);
    }

    UdpSender* AddUdpSender(uint32_t node, uint32_t to, uint16_t port, uint32_t flow,
                            uint32_t packetBytes, uint8_t tos, double start)
    {
        Ptr<UdpSender> sender = CreateObject<UdpSender>();
        sender->Setup(InetSocketAddress(AddressOf(to), port), flow, packetBytes, tos,
                      &m_hooks.sender);
        m_nodes[node]->AddApplication(sender);
        sender->SetStartTime(Seconds(start));
        return PeekPointer(sender);
    }

    UdpReceiver* AddUdpReceiver(uint32_t node, uint16_t port, uint32_t flow)
    {
        Ptr<UdpReceiver> receiver = CreateObject<UdpReceiver>();
        receiver->Setup(port, flow, &m_hooks.receiver);
        m_nodes[node]->AddApplication(receiver);
        receiver->SetStartTime(Seconds(0));
        return PeekPointer(receiver);
    }

    TraceSender* AddTraceSender(uint32_t node, uint32_t to, uint16_t port,
                                std::vector<int64_t> timesNs, std::vector<uint32_t> sizes,
                                std::vector<uint8_t> ecn)
    {
        Ptr<TraceSender> sender = CreateObject<TraceSender>();
        sender->Setup(InetSocketAddress(AddressOf(to), port), timesNs, sizes, ecn);
        m_nodes[node]->AddApplication(sender);
        sender->SetStartTime(Seconds(0));
        return PeekPointer(sender);
    }

    TraceReceiver* AddTraceReceiver(uint32_t node, uint16_t port)
    {
        Ptr<TraceReceiver> receiver = CreateObject<TraceReceiver>();
        receiver->Setup(port);
        m_nodes[node]->AddApplication(receiver);
        receiver->SetStartTime(Seconds(0));
        return PeekPointer(receiver);
    }

    // Python's hooks, each converted once (converting a Python callable is slow): the
    // bottlenecks' (with the port's number), the userspace transport's ends' (with the
    // flow's), and the timer's (with the event's: a sampler, a loop's step, a rate step).
    void SetHooks(DecideHook decide, DepartHook depart, ChildHook child, SenderHook sender,
                  ReceiverHook receiver, std::function<void(int64_t)> timer)
    {
        m_hooks = Hooks{decide, depart, child, sender, receiver, timer};
    }

    // The timer hook with `event` at `at` s.
    void At(double at, int64_t event)
    {
        Simulator::Schedule(Seconds(at), &Network::Call, this, event);
    }

    // The bottleneck's rate from `at` s on (bps of its own packets).
    void RateAt(double at, uint32_t bottleneck, double bps)
    {
        Simulator::Schedule(Seconds(at), &Network::SetRate, m_discs[bottleneck], bps);
    }

    const SegmentCounts& Segments(uint32_t node) const
    {
        return m_segments[node];
    }

    // Runs until `stop` s of simulated time; returns the wall-clock seconds it took.
    double Run(double stop)
    {
        Simulator::Stop(Seconds(stop));
        auto began = std::chrono::steady_clock::now();
        Simulator::Run();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    }

    double Now() const
    {
        return Simulator::Now().GetSeconds();
    }

    ~Network()
    {
        Simulator::Destroy();
    }

  private:
    void Call(int64_t event)
    {
        m_hooks.timer(event);
    }

    static void SetRate(Ptr<TwinQueueDisc> disc, double bps)
    {
        disc->SetRate(bps);
    }

    struct Capture_
    {
        Ptr<PcapFileWrapper> file;
        uint32_t left;
    };

    static void Captured(Capture_* capture, Ptr<const Packet> packet)
    {
        if (capture->left > 0)
        {
            capture->left--;
            capture->file->Write(Simulator::Now(), packet);
        }
    }

    static bool IsTcp(Ptr<const Packet> packet)
    {
        Ipv4Header header;
        packet->PeekHeader(header);
        return header.GetProtocol() == 6;
    }

    static void CountOut(SegmentCounts* counts, Ptr<const Packet> packet, Ptr<Ipv4> ip,
                         uint32_t interface)
    {
        if (IsTcp(packet))
        {
            counts->out++;
        }
    }

    static void CountIn(SegmentCounts* counts, Ptr<const Packet> packet, Ptr<Ipv4> ip,
                        uint32_t interface)
    {
        if (IsTcp(packet))
        {
            counts->in++;
        }
    }

    void Lossy(Ptr<NetDevice> device, double loss)
    {
        if (loss <= 0)
        {
            return;
        }
        Ptr<RateErrorModel> model = CreateObject<RateErrorModel>();
        model->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
        model->SetRate(loss);
        model->AssignStreams(m_streams++);
        device->SetAttribute("ReceiveErrorModel", PointerValue(model));
    }

    InternetStackHelper m_internet;
    std::vector<Ptr<Node>> m_nodes;
    std::deque<SegmentCounts> m_segments;
    std::vector<NetDeviceContainer> m_links;
    std::vector<Ipv4InterfaceContainer> m_interfaces;
    std::vector<Ptr<PointToPointNetDevice>> m_bottleneckDevices;
    std::vector<Ptr<TwinQueueDisc>> m_discs;
    std::deque<Capture_> m_captures;
    int64_t m_streams = 1000;

    struct Hooks
    {
        DecideHook decide;
        DepartHook depart;
        ChildHook child;
        SenderHook sender;
        ReceiverHook receiver;
        std::function<void(int64_t)> timer;
    } m_hooks;
};

} // namespace p4aqm_twin
