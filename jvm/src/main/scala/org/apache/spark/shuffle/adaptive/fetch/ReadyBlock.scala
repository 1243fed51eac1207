package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId}

/**
 * A block ready for the task to open: `buf` (the opener's to release), served as `id`; `block`
 * of `home` is what a fetch failure and the stream's decryption name. Found corrupt as it is
 * opened, `readAgain` is requested in its place (once); where that is empty the task fails, with
 * the serving executor's diagnosis of the corruption, or, where `buf` is the `onlyCopy` of what
 * it holds, with `name` in the message (made only for a message: a block served costs no
 * string). `opened` is called once the task has it open.
 */
private[spark] final case class ReadyBlock(
    id: BlockId,
    block: BlockRef,
    home: BlockManagerId,
    buf: ManagedBuffer,
    readAgain: Seq[FetchItem.At],
    onlyCopy: Boolean,
    name: () => String,
    opened: () => Unit = () => ())
