# A plan under `mpirun -np 2` ranks the candidates exactly as one process does.
# Run by CTest: cmake -DBIN=clustersim -DMPIEXEC=mpirun -DOUT=dir -P mpi_plan_test.cmake
set(ARGS plan --preset llama3-8b --set model.num_layers=8 --set model.seq_length=1024 --gpus 16
    --simulate 6 --top 6)
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${BIN} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE single)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "single-process plan failed: ${rc}")
endif()
execute_process(COMMAND ${MPIEXEC} -np 2 --allow-run-as-root --oversubscribe ${BIN} ${ARGS}
                RESULT_VARIABLE rc OUTPUT_VARIABLE mpi)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "mpirun plan failed: ${rc}")
endif()
# The summary line ends with the host wall time, the only thing allowed to differ.
string(REGEX REPLACE ", [0-9.]+ s\n" "\n" single "${single}")
string(REGEX REPLACE ", [0-9.]+ s\n" "\n" mpi "${mpi}")
if(NOT single STREQUAL mpi)
  file(WRITE ${OUT}/single.txt "${single}")
  file(WRITE ${OUT}/mpi.txt "${mpi}")
  message(FATAL_ERROR "mpirun and single-process plans differ: ${OUT}/single.txt ${OUT}/mpi.txt")
endif()
string(FIND "${single}" "#6" found)
if(found EQUAL -1)
  message(FATAL_ERROR "expected six ranked candidates:\n${single}")
endif()
