import kafkajs from 'kafkajs';

const { AssignerProtocol } = kafkajs;

/**
 * kafkajs's partition assigner for the engine's groups. Partition-scoped ('co-partitioned'): the
 * member for partition n is the same on every input topic (round robin over partition numbers, members
 * in id order), because partition n of all inputs is one task with one store and, on kafkajs, one
 * transactional producer. Global: every partition to one member (the first in id order), the
 * others stand by until it leaves.
 */
export function engineAssigner(global: boolean): kafkajs.PartitionAssigner {
  return ({ cluster }) => ({
    name: global ? 'BioalchemyGlobal' : 'BioalchemyCoPartitioned',
    version: 1,
    async assign({ members, topics }) {
      const ids = members.map((m) => m.memberId).sort();
      const plan = new Map<string, Record<string, number[]>>(ids.map((id) => [id, {}]));
      for (const topic of topics) {
        const partitions = cluster
          .findTopicPartitionMetadata(topic)
          .map((p) => p.partitionId)
          .sort((a, b) => a - b);
        for (const p of partitions) {
          const id = ids[global ? 0 : p % ids.length]!;
          const mine = plan.get(id)!;
          mine[topic] = [...(mine[topic] ?? []), p];
        }
      }
      return ids.map((memberId) => ({
        memberId,
        memberAssignment: AssignerProtocol.MemberAssignment.encode({
          version: 1,
          assignment: plan.get(memberId)!,
          userData: Buffer.alloc(0),
        }),
      }));
    },
    protocol({ topics }) {
      return {
        name: global ? 'BioalchemyGlobal' : 'BioalchemyCoPartitioned',
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }),
      };
    },
  });
}
